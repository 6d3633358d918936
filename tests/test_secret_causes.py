"""Causes of leaks a blind probe (s30) found, one group per cause: a value a command
printed because its file's or variable's name says it is a secret, a YAML ``!!binary``
value, a secret split into joined string literals, passwords passed by position, chat
prose in other languages, OTP seeds, Wi-Fi credentials, vendor formats; and public or
placeholder values that must stay. Each group holds fresh variants (written for these
tests, not taken from the probe's corpus) and look-alikes that hold no secret. The values
are fake.
"""

from __future__ import annotations

import pytest

from memlane import secret_words
from memlane.privacy import mask_env_file, reveals_secret, scrub, shows_env_file
from tests.secret_cases import assert_kept, assert_masked

# ----------------------------------------------------- revealing commands by name

# A command whose output is the value of a file or variable named for a secret.
PRINTED_BY_NAME = [
    ("$ echo $API_TOKEN\nq8Zr2LmXv7Tn4Kp1Wd9Ys3\n$ ls", "q8Zr2LmXv7Tn4Kp1Wd9Ys3"),
    ('$ echo "${DB_PASSWORD}"\nplum-otter-river-71\n', "plum-otter-river-71"),
    ("$ printf '%s\\n' \"$STRIPE_WEBHOOK_SECRET\"\nnR4tY8uI2oP6aS0dF3\n", "nR4tY8uI2oP6aS0dF3"),
    ("$ printenv GITLAB_TOKEN\nTg9Lm2Xc7Vb4Nq1Zw8\n", "Tg9Lm2Xc7Vb4Nq1Zw8"),
    ("$ echo $jwtSecret | base64\nS2V5LXZhbHVlLTEyMzQ1Ng==\n", "S2V5LXZhbHVlLTEyMzQ1Ng=="),
    ("$ cat secrets/redis_password.txt\nRq7#vLm2-Zx9\n", "Rq7#vLm2-Zx9"),
    (
        "$ cat /run/secrets/session_key\n9f8e7d6c5b4a39281706f5e4d3c2b1a0\n",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    ),
    ("$ sudo cat /etc/app/master.key\n6b1f0c3e9a7d2f48\n", "6b1f0c3e9a7d2f48"),
    ("$ docker exec web cat /run/secrets/smtp\nmailpass-Q7w2\n", "mailpass-Q7w2"),
    (
        "ops@bastion:~/deploy$ cat ~/.config/hub/credentials\nWq8mZ2xLp4Rt\n",
        "Wq8mZ2xLp4Rt",
    ),
    ("root@web1:/srv# head -c 64 api_key\nAbCd1234EfGh5678IjKl\n", "AbCd1234EfGh5678IjKl"),
    ("PS C:\\app> echo $env:DEPLOY_TOKEN\nXw3Rt7Yu1Io5Pa9S\n", "Xw3Rt7Yu1Io5Pa9S"),
    ("$ heroku auth:token\n 3f8a1c9e-2b7d-4c1a-9e8f-1a2b3c4d5e6f\n", "3f8a1c9e-2b7d-4c1a-9e8f"),
    ("$ openssl rand -base64 24\nVGhpc0lzQVJhbmRvbUtleTEy\n", "VGhpc0lzQVJhbmRvbUtleTEy"),
]

# The same commands on names that hold no secret, or whose output goes elsewhere.
PRINTED_NOT_SECRET = [
    "$ echo $PATH\n/usr/local/bin:/usr/bin",
    "$ echo $AWS_ACCESS_KEY_ID_FILE\n/run/keyid",
    "$ echo $SSH_AUTH_SOCK\n/tmp/ssh-XXXXabcd/agent.1234",
    "$ echo ${#API_TOKEN}\n40",
    "$ echo $API_TOKEN | wc -c\n41",
    "$ echo $API_TOKEN > token.txt\n$ ls\ntoken.txt",
    "$ cat ~/.ssh/id_ed25519.pub\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA example@host",
    "$ cat token.example\nyour-token-here",
    "$ cat secrets/README.md\nPut the files here.",
    "$ cat src/tokenizer.py\nimport re",
    "$ echo $PUBLIC_KEY\nage1qqqqexamplepublic",
    "$ echo $CACHE_KEY\nbuild-cache-v3",
    "$ cat keyboard.conf\nlayout=us",
]


@pytest.mark.parametrize(("text", "secret"), PRINTED_BY_NAME)
def test_what_a_command_prints_from_a_secret_name_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", PRINTED_NOT_SECRET)
def test_what_a_command_prints_from_another_name_stays(text: str) -> None:
    assert_kept(text)


def test_a_tool_call_printing_a_secret_file_is_withheld() -> None:
    assert reveals_secret("Bash", {"command": "cat /run/secrets/jwt_key"})
    assert reveals_secret("Bash", {"command": "echo $GITHUB_TOKEN"})
    assert not reveals_secret("Bash", {"command": "cat README.md"})
    assert not reveals_secret("Bash", {"command": "echo $HOME"})


# ------------------------------------------------------- YAML tags, joined strings

JOINED_AND_TAGGED = [
    ("db:\n  password: !!binary |\n    cGx1bS1vdHRlci1yaXZlcg==\n", "cGx1bS1vdHRlci1yaXZlcg=="),
    ("secret: !!binary |\n  c2VjcmV0LXZhbHVlLTk5\n  cmVzdA==\n", "cmVzdA=="),
    ('password = "Sup3r" + "Secret99"', "Secret99"),
    ('String dbPassword = "river" +\n    "Otter-4471";', "Otter-4471"),
    ("$password = 'mango' . 'Zephyr-25';", "Zephyr-25"),
    ("local token = 'tk_a1b2' .. 'c3d4e5f6'", "c3d4e5f6"),
    ('const apiKey = "k-19x" + "7Qm2Lp" + "Zz81";', "Zz81"),
]


@pytest.mark.parametrize(("text", "secret"), JOINED_AND_TAGGED)
def test_a_tagged_or_joined_value_is_masked_whole(text: str, secret: str) -> None:
    assert_masked(text, secret)


def test_a_joined_expression_keeps_what_follows_its_literals() -> None:
    out = scrub('password = "Sup3r" + "Secret99"; user = "app" + suffix')
    assert "Secret99" not in out and 'user = "app" + suffix' in out


# ------------------------------------------------------ passwords by position

POSITIONAL = [
    ('c = DriverManager.getConnection(jdbcUrl, "report", "plum-otter-22");', "plum-otter-22"),
    ("$db = new PDO($dsn, 'shop', 'Kq7#mango-11');", "Kq7#mango-11"),
    ('$link = mysqli_connect("db", "app", "Lx-4471-zz", "shop");', "Lx-4471-zz"),
    ('var cred = new NetworkCredential("svc-backup", "Bk-2024-river");', "Bk-2024-river"),
    ('r = requests.get(url, auth=HTTPBasicAuth("ci", "Ci-pass-9981"))', "Ci-pass-9981"),
    ('r = requests.get(url, auth=("ci", "Tuple-pw-3310"))', "Tuple-pw-3310"),
    ('server.login("alerts@example.org", "smtp-Q7w2-pass")', "smtp-Q7w2-pass"),
    ('keyring.set_password("deploy", "bob", "Kr-998-xyz")', "Kr-998-xyz"),
    (
        'Twilio.init("AC0123456789abcdef0123456789abcdef", "f00dbabe0123456789abcdef01234567");',
        "f00dbabe0123456789abcdef01234567",
    ),
    (
        'TwilioClient.Init(accountSid, "7d6c5b4a39281706f5e4d3c2b1a09f8e");',
        "7d6c5b4a39281706f5e4d3c2b1a09f8e",
    ),
    ('auth = tweepy.OAuthHandler("consumerkey123", "Cs-8812-secretvalue")', "Cs-8812-secretvalue"),
    ('session.setPassword("ssh-Pw-7731");', "ssh-Pw-7731"),
    ('client.withApiKey("ak-19x7Qm2LpZz81");', "ak-19x7Qm2LpZz81"),
    ("CREATE USER 'etl'@'%' IDENTIFIED BY 'cedar-comet-25';", "cedar-comet-25"),
    ("ALTER USER report WITH ENCRYPTED PASSWORD 'Rp-7781-xx';", "Rp-7781-xx"),
    ("mosquitto_pub -h broker.local -u sensor -P Mq-tt-4471 -t temp -m 21", "Mq-tt-4471"),
    ("mosquitto_passwd -b /etc/mosquitto/passwd sensor1 Sn-998-qq", "Sn-998-qq"),
    ("cqlsh 10.0.0.5 -u cassandra -p Cq-pass-77", "Cq-pass-77"),
    ("evil-winrm -i 10.0.0.9 -u Administrator -p 'Wr-55-admin!'", "Wr-55-admin!"),
    ("echo -n 'admin:Xq81mZ2LpW' | base64", "Xq81mZ2LpW"),
    ('base64 <<< "deploy:Dp-44-xxyz"', "Dp-44-xxyz"),
    ('const h = "Basic " + btoa("bob:Bb-pass-12");', "Bb-pass-12"),
    (
        '{"type": "random_password", "name": "db", "instances": [{"attributes": '
        '{"length": 20, "result": "K#sz^#wm2!bI7Q", "special": true}}]}',
        "K#sz^#wm2!bI7Q",
    ),
]

POSITIONAL_KEPT = [
    "c = DriverManager.getConnection(url, user, password);",
    "$db = new PDO($dsn, $user, $pass);",
    "r = requests.get(url, auth=(user, token))",
    "server.login(user, app_password)",
    'x.setName("bob"); y.setTimeout(100); z.withLabel("Sign in")',
    'session.setPassword("");',
    'c = Client("localhost", "8080")',
    "the role was identified by the team",
    "mosquitto_pub -h broker -p 1883 -t temp -m 21",
    'echo -n "$USER:$PASS" | base64',
    "echo time: 12:30 | base64",
    "echo -n 'YWRtaW46cHc=' | base64 -d",
    '{"type": "random_pet", "name": "x", "instances": [{"attributes": {"id": "brave-otter"}}]}',
]


@pytest.mark.parametrize(("text", "secret"), POSITIONAL)
def test_a_password_passed_by_position_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", POSITIONAL_KEPT)
def test_a_variable_or_another_argument_by_position_stays(text: str) -> None:
    assert_kept(text)


# ------------------------------------------------------------ prose in other languages

PROSE_ELSEWHERE = [
    ("la password del server di staging è Qv8Lm2Xc7Tn4", "Qv8Lm2Xc7Tn4"),
    ("het wachtwoord van de router is Rt9Kd2Lm7Xq4", "Rt9Kd2Lm7Xq4"),
    ("das Passwort für den Server ist Kx9-Lm2-Qp7", "Kx9-Lm2-Qp7"),
    ("la contraseña de la base es Db7Qm2Lx9Zt4", "Db7Qm2Lx9Zt4"),
    ("la clave del wifi es Nube-Roja-77", "Nube-Roja-77"),
    ("veritabanı şifresi orman77NEHIR.", "orman77NEHIR"),
    ("şifreniz: Ab12cd34ef", "Ab12cd34ef"),
    ("APIキーはQz8Lm2Xc7Tn4Kp1Wd9Ysです", "Qz8Lm2Xc7Tn4Kp1Wd9Ys"),
    ("トークンはghx8Y2kLm9Qw7Rt3です", "ghx8Y2kLm9Qw7Rt3"),
    ("api密钥是 sk9Lm2Qp7Xw4Rt6Yv8", "sk9Lm2Qp7Xw4Rt6Yv8"),
    ("토큰은 Zx8Lm2Qp7Xw4Rt6Y", "Zx8Lm2Qp7Xw4Rt6Y"),
]

PROSE_ELSEWHERE_KEPT = [
    "la clave es la paciencia",
    "het wachtwoord van de router is sterk genoeg",
    "das Passwort ist zu kurz",
    "APIキーの設定を確認してください",
    "la password del server è cambiata ieri",
    "şifre sıfırlama bağlantısı gönderildi",
]


@pytest.mark.parametrize(("text", "secret"), PROSE_ELSEWHERE)
def test_a_secret_in_another_languages_sentence_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", PROSE_ELSEWHERE_KEPT)
def test_such_a_sentence_without_a_secret_stays(text: str) -> None:
    assert_kept(text)


# --------------------------------------------------- vendor formats, public values

VENDOR = [
    ("FIGMA_PAT is figd_Qw8Lm2Xc7Tn4Kp1Wd9Ys3Rt6Yv8Bn2Mk5Lp9Zx3Cv", "figd_Qw8Lm2Xc7Tn4Kp1Wd9"),
    (
        "gateway = access_token$sandbox$q7lm2xc7tn4kp1wd$0123456789abcdef0123456789abcdef",
        "0123456789abcdef0123456789abcdef",
    ),
]

PUBLIC_OR_PLACEHOLDER = [
    "STRIPE_SECRET_KEY=sk_test_...",
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "see ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX in the docs",
    "SLACK_WEBHOOK=https://hooks.slack.com/services/XXX/YYY/ZZZ",
    "figd_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "Stripe.js: pk_live_51Hq8Lm2Xc7Tn4Kp1Wd9Ys3Rt6Yv8",
    "PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
    "public_key: xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
    "the age public key is age1qz8lm2xc7tn4kp1wd9ys3rt6yv8bn2mk5lp9zx3cv0aqs4df6gh8jk",
    # A docstring's Sphinx cross-reference after a secret word (was masked as a value).
    "unless holes pass :data:`REWRITE_HOLES` of the base",
    "Returns the token :class:`Token` for the session.",
    "password :attr:`hashed` is compared in constant time",
    "the secret :py:func:`load_secret` reads",
]


@pytest.mark.parametrize(("text", "secret"), VENDOR)
def test_a_vendor_token_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", PUBLIC_OR_PLACEHOLDER)
def test_a_public_key_or_a_placeholder_stays(text: str) -> None:
    assert_kept(text)


def test_a_private_key_beside_a_public_one_is_masked() -> None:
    text = (
        "[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n"
        "[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\n"
    )
    out = scrub(text)
    assert "yAnz5TF" not in out and "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=" in out
    assert_masked("token: ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "ghp_aB3dE5fG7hI9")
    assert_masked("x sk_live_FzeY6MTzZJJ7ig4xoq2fuoFa", "sk_live_FzeY6MTzZJJ7")


# ------------------------------------------------------------- OTP seeds, Wi-Fi

OTP_AND_WIFI = [
    ("oathtool --totp -b JBSWY3DPEHPK3PXQ", "JBSWY3DPEHPK3PXQ"),
    ("oathtool --base32 --totp KRSXG5CTMVRXEZLU -d 6", "KRSXG5CTMVRXEZLU"),
    ('code = pyotp.TOTP("KRSXG5CTMVRXEZLU").now()', "KRSXG5CTMVRXEZLU"),
    ("hotp = pyotp.HOTP('GEZDGNBVGY3TQOJQ')", "GEZDGNBVGY3TQOJQ"),
    ("Can't scan? Enter manually: RQCE GUYU LPJZ FKFG QOY2 AAKF BIXM 76L6", "QOY2 AAKF"),
    ("Authenticator setup key: jbsw y3dp ehpk 3pxq", "y3dp ehpk"),
    ("WIFI:T:WPA;S:HomeNet;P:Sunny-Day-42;;", "Sunny-Day-42"),
    ("WIFI:S:Office 5G;T:WPA2;P:Kaffee\\;Bohne9;H:false;;", "Bohne9"),
]

OTP_AND_WIFI_KEPT = [
    "Build 2024 ABCD EF23 GHIJ KLMN shipped",
    "THIS IS VERY GOOD NEWS FOR THE TEAM",
    "totp = pyotp.TOTP(secret)",
    "enter manually the four words: blue fish tree lamp",
    "WIFI:T:WPA;S:HomeNet;P:;;",
]


@pytest.mark.parametrize(("text", "secret"), OTP_AND_WIFI)
def test_an_otp_seed_or_a_wifi_password_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", OTP_AND_WIFI_KEPT)
def test_groups_of_words_or_an_empty_wifi_password_stay(text: str) -> None:
    assert_kept(text)


# ------------------------------------------------- each rule's gate lets its text through

# Texts a rule masks that its cheap gate once kept from it: a blank other than a space,
# another case, a group ending a sentence, a group of digits alone.
GATED_SHAPES = [
    ("Enter manually: ABCD 2345 EFGH IJKL", "ABCD 2345 EFGH IJKL"),
    ("setup key (2FA): QRST UVWX YZ23 MN47.", "QRST UVWX YZ23 MN47"),
    ('client.setPassword ("Tq8-vLm2-Zx9w")', "Tq8-vLm2-Zx9w"),
    ("CREATE USER app IdEntified BY 'Rv7#pQ2-mX9w';", "Rv7#pQ2-mX9w"),
    ("root@web1:/srv#\tcat /run/secrets/db_password\nWq8mZ2xLp4Rt9Kd\n", "Wq8mZ2xLp4Rt9Kd"),
    ("$\tcat /run/secrets/db_password\nYu3rT8pLk2Wq7Zx\n", "Yu3rT8pLk2Wq7Zx"),
]


@pytest.mark.parametrize(("text", "secret"), GATED_SHAPES)
def test_a_rules_gate_lets_through_what_the_rule_masks(text: str, secret: str) -> None:
    assert_masked(text, secret)


# ------------------------------------------------- kinds still stored (s31 review)

# Secrets the filter stored in the 31st session's review, one cause each: a password of
# letters whose case no identifier has, taken for a variable; an adverb between "is" and
# the value; a heading line between "recovery codes" and the codes; the value alone on
# the line after "the key is" / "the token:".
STORED_KINDS = [
    ("default_pass = qWErTyUiOpLk", "qWErTyUiOpLk"),
    ("[rabbit]\nadmin_password = vKQmRtZxWpLb\n", "vKQmRtZxWpLb"),
    ("fyi the wifi password is now Lumen-Kite-58", "Lumen-Kite-58"),
    ("the deploy token is still Zq7rT2mW9xK4pL8v, rotate it", "Zq7rT2mW9xK4pL8v"),
    ("Your GitLab recovery codes - keep them safe:\n7c1d0-a9e3f\nb2k8q-4m0zt\n", "7c1d0-a9e3f"),
    ("Backup codes (print these):\n2291 8830\n5176 4402\n", "5176 4402"),
    ("ok here's the token:\nWv3Qz8Lm2Rt6Yp1Nk5Xc\nthanks", "Wv3Qz8Lm2Rt6Yp1Nk5Xc"),
    ("the signing key is\n  Hq2Wz7Lp4Xv9Rm3Tk8Bn6Yc\n", "Hq2Wz7Lp4Xv9Rm3Tk8Bn6Yc"),
    ("the db password was:\nOrchid#Lake42\n", "Orchid#Lake42"),
    # a user and a password split by " / "
    ("router login is root / copper-finch-19 (change it)", "copper-finch-19"),
    ("Guest wifi: CafeNorte / latte2go-77", "latte2go-77"),
    # a secret set to a new value, named before or as the object
    ("The staging password expired. I just reset it to Birch-Lantern-62", "Birch-Lantern-62"),
    ("we changed the vpn passphrase to Kestrel9Dune yesterday", "Kestrel9Dune"),
    # Mailgun keys without their prefix
    ("mailgun: 9b2e4c6a8f1d3b5e7a9c0e2f4a6b8d1c", "9b2e4c6a8f1d3b5e7a9c0e2f4a6b8d1c"),
    (
        "Our Mailgun sending key is 5f7a9c1e3b5d7f9a2c4e6b8d0f1a3c5e-7b9d1f3a-c5e7a9b2",
        "5f7a9c1e3b5d7f9a2c4e6b8d0f1a3c5e-7b9d1f3a-c5e7a9b2",
    ),
    # a failed assertion's report showing a secret-named value (pytest)
    (
        ">       assert api_token == expected\n"
        "E       AssertionError: assert 'Rv8-Tq2-Lm5-Xz9' == 'abc'\n"
        "E         - abc\nE         + Rv8-Tq2-Lm5-Xz9\n",
        "Rv8-Tq2-Lm5-Xz9",
    ),
    (
        ">       assert strong_enough(secret)\n"
        "E       AssertionError: assert False\n"
        "E        +  where False = strong_enough('Opal-Ridge-31')\n",
        "Opal-Ridge-31",
    ),
]

# Their look-alikes: identifiers, a sentence going on after "now", a heading without
# codes under it, YAML's nested keys and a word on the next line; a Sentry DSN, whose
# key is public by design (the browser SDK ships it).
STORED_KINDS_KEPT = [
    "password = getPasswordFromVault",
    "default_pass = XMLHttpRequestPass",
    "the password is now required for every login",
    "Recovery codes (keep them safe):\nsee the vault entry for them",
    "the token is:\nrequired",
    "credentials:\n  credential1:\n    api_key: <API_KEY_1>",
    "password:\n  min_length: 12",
    "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o450123.ingest.sentry.io/5123456",
    "Sentry.init({ dsn: 'https://0123456789abcdef0123456789abcdef@o45.ingest.us.sentry.io/51' })",
    "dsn https://0123456789abcdef0123456789abcdef@o450123.ingest.sentry.io/5123456",
    "login is admin / user (two roles)",
    "the account is admin / ops-team-2 in the wiki",
    "login: GET /api/v2/session",
    "I reset the branch to release-2024 and changed it to main",
    "we rotated the token expiry to 2025-01-31",
    "mailgun webhook id 3f2a (see the dashboard)",
    "git commit 9b2e4c6a8f1d3b5e7a9c0e2f4a6b8d1c9b2e4c6a fixed the mailgun retry",
    ">       assert user.name == 'bob'\nE       AssertionError: assert 'alice' == 'bob'\n",
]


@pytest.mark.parametrize(("text", "secret"), STORED_KINDS)
def test_a_kind_the_review_found_stored_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", STORED_KINDS_KEPT)
def test_its_look_alike_stays(text: str) -> None:
    assert_kept(text)


def test_a_sentry_dsn_with_its_secret_is_masked() -> None:
    secret = "fedcba9876543210fedcba9876543210"
    assert_masked(
        f"SENTRY_DSN=https://0123456789abcdef0123456789abcdef:{secret}@sentry.io/42", secret
    )


PUBLIC_DSN = "https://0123456789abcdef0123456789abcdef@o450123.ingest.sentry.io/5123456"


@pytest.mark.parametrize(
    "text",
    [
        # Each rule masked it where its own picker did not ask secret_values.public_dsn:
        f"the sentry dsn is {PUBLIC_DSN}",  # prose
        f"my dsn for prod: {PUBLIC_DSN}, set in the dashboard",
        f"The DSN is\n{PUBLIC_DSN}\n",  # prose, the value on the next line
        f"<dsn>{PUBLIC_DSN}</dsn>",  # an XML element
        f"sentry_dsn: {PUBLIC_DSN} # public",  # a YAML value and its comment
        f"see {PUBLIC_DSN}, the project's",  # a URL's user
        # The assignment's value ran to the end of the line, punctuation included:
        f"set SENTRY_DSN={PUBLIC_DSN}.",
        f"export SENTRY_DSN={PUBLIC_DSN}. Then restart.",
        f"(dsn={PUBLIC_DSN})",
        f"SENTRY_DSN={PUBLIC_DSN}.\nnext line",
        *(f"SENTRY_DSN: {PUBLIC_DSN}{mark}" for mark in (".", ",", ";", ":", ")", "]", "'", '"')),
        f"SENTRY_DSN={PUBLIC_DSN}.) # public",
    ],
)
def test_a_public_dsn_is_kept_by_every_rule(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("the sentry dsn is https://0123456789abcdef0123456789abcdef@sentry.example.com/2", "0123"),
        (f"my dsn for prod: {PUBLIC_DSN}/extra", "0123"),  # a path after the project: no DSN
        (f"sentry_dsn: {PUBLIC_DSN} Hunter2-secret", "Hunter2-secret"),
        # Closing punctuation is no key part: a legacy secret, or text glued on, stays masked.
        (f"SENTRY_DSN=https://{'0' * 32}:fedcba9876543210fedcba9876543210@sentry.io/42.", "fedcba"),
        (f"SENTRY_DSN={PUBLIC_DSN}.Hunter2-secret", "Hunter2-secret"),
        (f"sentry_dsn: {PUBLIC_DSN}. Hunter2-secret", "Hunter2-secret"),
    ],
)
def test_what_is_no_public_dsn_stays_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


def test_a_config_listing_keeps_its_names_and_masks_its_values() -> None:
    # heroku config prints an app's config vars (its environment): masked as a dotenv
    # file is, in a pasted session and in a captured tool call; no longer withheld whole.
    listing = (
        "=== shop Config Vars\n"
        "DATABASE_URL:    postgres://u:Walnut-Creek-7@ec2.compute.amazonaws.com:5432/d\n"
        "SESSION_SECRET:  Cinder-Moss-4410\n"
    )
    for command in ("heroku config -a shop", "heroku config -s", "heroku config | grep S"):
        out = scrub(f"$ {command}\n{listing}$ ls\n")
        assert "Walnut-Creek-7" not in out and "Cinder-Moss-4410" not in out, out
        assert "SESSION_SECRET:  [REDACTED:env]" in out and "=== shop Config Vars" in out
        assert not reveals_secret("Bash", {"command": command})
        assert shows_env_file("Bash", {"command": command})
    masked = mask_env_file(listing)
    assert "DATABASE_URL:    [REDACTED:env]" in masked and "Cinder" not in masked
    assert reveals_secret("Bash", {"command": "heroku config:get SESSION_SECRET"})


def test_the_shell_form_of_a_config_listing_keeps_its_names_and_masks_its_values() -> None:
    # `heroku config -s` (--shell) prints NAME='value' lines, to paste into a .env file.
    listing = (
        "DATABASE_URL='postgres://u:Walnut-Creek-7@ec2.compute.amazonaws.com:5432/d'\n"
        "SESSION_SECRET='Cinder-Moss-4410'\n"
        "WELCOME_BANNER=Quartz-Ridge-77\n"  # no secret name: masked as a listing's value
    )
    for command in ("heroku config -s", "heroku config --shell -a shop | grep E"):
        out = scrub(f"$ {command}\n{listing}$ ls\n")
        assert "DATABASE_URL='[REDACTED:env]'" in out, out
        assert "SESSION_SECRET='[REDACTED:env]'\nWELCOME_BANNER=[REDACTED:env]\n" in out, out
        assert shows_env_file("Bash", {"command": command})
    masked = mask_env_file(listing)
    assert "Walnut" not in masked and "Cinder" not in masked and "Quartz" not in masked


@pytest.mark.parametrize(
    ("command", "lists"),
    [
        ("echo heroku config", False),  # prints two words
        ('echo "run heroku config -s"', False),
        ("man heroku config", False),
        ('grep -r "heroku config" .', False),
        ("command -v heroku config", False),  # locates the program, runs nothing
        ("command -V heroku config", False),
        ("sudo command -pv heroku config", False),
        ("which heroku config", False),
        ("type heroku config", False),
        ("whereis heroku config", False),
        ("command heroku config", True),  # runs it
        ("command -p heroku config", True),
        ("which heroku && heroku config -s", True),
        ("sudo heroku config -s", True),
        ("sudo -u deploy heroku config", True),  # the prefix's options come first
        ("nohup sudo -E heroku config -s", True),
        ("time -p heroku config", True),
        ("timeout 10 heroku config", True),  # heroku run by another program
        ("env FOO=1 heroku config", True),
        ("bundle exec heroku config", True),
        ("( heroku config )", True),
        ("{ heroku config; }", True),
        ("HEROKU_APP=shop /usr/local/bin/heroku config", True),
        ("cd shop && heroku config -s | grep URL", True),
    ],
)
def test_a_config_listing_is_heroku_run_as_the_program(command: str, lists: bool) -> None:
    assert secret_words.lists_env(command) is lists
    assert shows_env_file("Bash", {"command": command}) is lists
    # The listing rule masks the values a listing printed, and only those.
    out = scrub(f"$ {command}\nWELCOME_BANNER=Quartz-Ridge-77\n$ ls\n")
    assert ("Quartz-Ridge-77" not in out) is lists, out


def test_a_value_shaped_like_a_cross_reference_with_another_role_is_masked() -> None:
    assert_masked("token = ab:`Zq8vT3pLmQ7xW2`", "Zq8vT3pLmQ7xW2")


# ------------------------------------------- names and hex the s31 review (prev) found

# A Terraform output is read by its whole name (secret_words.secret_name): a short root
# of a secret word inside another word (tokyo, pwa) names no secret.
TERRAFORM_SECRET_OUTPUTS = [
    "terraform output -raw db_password",
    "terraform output -json admin_token",
    "terraform -chdir=infra output api_key",
    "terraform output -raw kubeconfig",
    "terraform output kube_config_raw",
    "terraform output -raw basic_auth",
]
TERRAFORM_OTHER_OUTPUTS = [
    "terraform output -raw tokyo_region",
    "terraform output -raw pwa_url",
    "terraform output -json keycloak_url",
    "terraform output -raw credits_bucket",
    "terraform output -raw public_key",
]


@pytest.mark.parametrize("command", TERRAFORM_SECRET_OUTPUTS)
def test_a_terraform_output_named_for_a_secret_is_withheld(command: str) -> None:
    assert reveals_secret("Bash", {"command": command})


@pytest.mark.parametrize("command", TERRAFORM_OTHER_OUTPUTS)
def test_a_terraform_output_named_otherwise_is_not(command: str) -> None:
    assert not reveals_secret("Bash", {"command": command})


# 32 hex digits after "mailgun" that an identifier's or a digest's word names.
MAILGUN_HEX_KEPT = [
    "mailgun message id 9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c in the log",
    "checksum of mailgun.tar: 9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c",
    "mailgun message-id: 9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c",
    "MAILGUN_MSG_ID=9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c",
    "md5 mailgun-2.1.tgz 9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c",
]
MAILGUN_KEYS = [
    ("mailgun api key: 9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c", "9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c"),
    ("MAILGUN_API_KEY=9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c", "9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c"),
    (
        "the mailgun key for the shop is 9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c-7b9d1f3a-c5e7a9b2",
        "9b2e0c7a4f1d3e5b6a8c0d2e4f6a8b1c-7b9d1f3a-c5e7a9b2",
    ),
]


@pytest.mark.parametrize("text", MAILGUN_HEX_KEPT)
def test_an_id_or_a_digest_after_mailgun_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), MAILGUN_KEYS)
def test_a_mailgun_key_without_its_prefix_is_still_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize(
    ("command", "shows"),
    [
        ("sudo -u deploy cat .env", True),  # a prefix's options come before the program
        ("exec -a reader cat .env", True),
        ("command cat .env", True),
        ("echo cat .env", False),
        ("command -v cat .env", False),  # says where cat is
    ],
)
def test_a_prefix_and_its_options_are_skipped_to_find_the_program(
    command: str, shows: bool
) -> None:
    assert shows_env_file("Bash", {"command": command}) is shows
