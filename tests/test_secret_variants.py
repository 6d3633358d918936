"""Secret forms a held-out probe (s28) found the filter missing, one group per rule
change: key names with a version qualifier (``PASSWORD_V4``), a dotenv value that is a
multi-line private key, vendor token variants, a secret word on a sibling key, tools'
password arguments… Each is
checked through the filter (with and without its gates); text of the same shape that
holds no secret stays as it is. The values are fake.
"""

from __future__ import annotations

import pytest

from memlane import secret_rules
from memlane.privacy import mask_env_file, reveals_secret, scrub
from tests.secret_cases import assert_kept, assert_masked

# Key names with a version qualifier (_v4, -v2, V1) after the secret word, as
# PASSWORD_2 and DB_PASSWORD_OLD take qualifiers. Before: stored as they were.
VERSIONED_KEYS = [
    ("PASSWORD_V4=Xk29!abcq", "Xk29!abcq"),
    ('{"password_v2": "Vq7-pass-two"}', "Vq7-pass-two"),
    ("token_v2: Tk7versioned", "Tk7versioned"),
    ("secret_v3 = 'Sc7versioned'", "Sc7versioned"),
    ("API_TOKEN_V1=Api7versioned", "Api7versioned"),
    ("ENV SIGNING_KEY_V2=oIW2RoSf6ejUONIC4vLIyorPRxIh32J+fFCjhA+Bx7Mz", "oIW2RoSf6ejUONIC4vLIy"),
    ('            "ses_smtp_password_v4": "Bnl33oEeqd/4rfACg3iklUEC/NlM"', "Bnl33oEeqd/4rfACg3"),
    ("db-password-v2: Dbv7versioned", "Dbv7versioned"),
    ("passwordV2=Pwv7versioned", "Pwv7versioned"),
    ("DB_PASSWORD_V2_OLD=Old7versioned", "Old7versioned"),
    ("export GITHUB_TOKEN_V10='Gh7versioned'", "Gh7versioned"),
]

# A v without digits, a word going on, a weak name's plain value: no secret.
VERSIONED_KEPT = [
    "the password vault is open",
    "password_version = 3",
    "tokenv = abc",
    "key_v2 = abc",
    "cache_key_v2 = release20240101final",
    "PASSWORD_VALIDATOR = strict",
    "token_vendor: acme",
]


@pytest.mark.parametrize(("text", "secret"), VERSIONED_KEYS)
def test_a_key_name_with_a_version_qualifier_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


def test_a_versioned_key_is_found_in_a_long_text_too() -> None:
    # 256+ characters: the gates find key names by their automaton, not by loops.
    filler = "the build ran and every check passed on the first try today. " * 6
    for text, secret in VERSIONED_KEYS:
        assert_masked(filler + text + "\n" + filler, secret)


@pytest.mark.parametrize("text", VERSIONED_KEPT)
def test_a_version_like_name_without_a_secret_stays(text: str) -> None:
    assert_kept(text)


# A private key as a dotenv value (GitHub App style): dotenv lets a quoted value run over
# lines. Before, a triple-quoted or unclosed value had its first line masked as the env
# value, the BEGIN line with it, and the key's body was stored.
_KEY_BODY = (
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7Zq9fakeBody0001\n"
    "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijklmnopFakeBody0002\n"
    "QrStUvWxYz0123456789+/FakeBody0003=="
)
_PEM = f"-----BEGIN PRIVATE KEY-----\n{_KEY_BODY}\n-----END PRIVATE KEY-----"
ENV_FILES_WITH_A_KEY = [
    f'APP_ENV=production\nSIGNING_KEY = """{_PEM}"""\nLOG_LEVEL=info\n',
    f"APP_ENV=production\nSIGNING_KEY='''{_PEM}'''\nLOG_LEVEL=info\n",
    f'APP_ENV=production\nGITHUB_APP_PRIVATE_KEY="{_PEM}"\nLOG_LEVEL=info\n',
    f"APP_ENV=production\nSIGNING_KEY={_PEM}\nLOG_LEVEL=info\n",  # not quoted
    f'APP_ENV=production\nSIGNING_KEY="{_PEM}\n',  # the quote never closed
    '     1\u2192APP_ENV=production\n     2\u2192SIGNING_KEY = """'
    + _PEM.replace("\n", "\n     3\u2192")
    + '"""\n',
]


@pytest.mark.parametrize("text", ENV_FILES_WITH_A_KEY)
def test_a_private_key_as_a_dotenv_value_is_masked_whole(text: str) -> None:
    out = mask_env_file(text)
    for n in (1, 2, 3):
        assert f"FakeBody000{n}" not in out, out
    assert "Zq9fake" not in out and "[REDACTED:" in out, out
    assert "APP_ENV=[REDACTED:env]" in out, out


def test_a_triple_quoted_dotenv_value_is_one_value() -> None:
    text = 'A="""one\nTwo7-line"""\nB=\'\'\'x\nY7-line\'\'\'  # a comment\nC=""\nD=plain\n'
    assert mask_env_file(text) == (
        'A="""[REDACTED:env]"""\nB=\'\'\'[REDACTED:env]\'\'\'  # a comment\nC=""\n'
        "D=[REDACTED:env]\n"
    )


# Token formats in a variant: a Doppler service token naming its config, GitLab's
# routable token (its tail after the payload), today's Mailgun private key under a weak
# name. Before: the first and the last stored whole, GitLab's ".1A.<checksum>" kept.
TOKEN_VARIANTS = [
    (
        'ENV["DOPPLER"] = "dp.st.prd.3ugmhUbC498fZVh1pO6iY0aSR16OX7gzX3htrAIm3QR"',
        "3ugmhUbC498fZVh1pO6iY0aSR16OX7gzX3htrAIm3QR",
    ),
    (
        "doppler run --token dp.st.dev_personal.Zq9fakeDopplerTokenBody0123456789abcdefXY",
        "Zq9fakeDopplerTokenBody0123456789abcdefXY",
    ),
    ("GITLAB_PAT_NEW=glpat-q2IPXBl1KEDqsyurk_Jm5_wfpSadw-SFVtIL.1A.6AtvDZ3P3", ".1A.6AtvDZ3P3"),
    (
        "git clone https://oauth2:glpat-Zq9fakeRoutablePayload01.01.0z8fake9k@gitlab.com/a/b",
        "0z8fake9k",
    ),
    ('mailgun_key := "977dbc0f21fd8a75e01d772e5669c5a4-eb197fd2-f9386032"', "eb197fd2-f9386032"),
    ("MG_KEY=3fa9c2e1b7d04a68e5f1c29b8d7a6e40-1f2e3d4c-9a8b7c6d", "3fa9c2e1b7d04a68"),
]

# The same shapes without a secret: a Doppler docs word, a plain glpat mention, a UUID
# or a counter-like triple under a weak name.
TOKEN_VARIANTS_KEPT = [
    "set DOPPLER_TOKEN to a dp.st.prd. token from the dashboard",
    "tokens start with glpat- and may end in .01.<checksum>",
    "idempotency_key: 123e4567-e89b-12d3-a456-426614174000",
    "key: 00000000000000000000000000000000-00000000-00000000",
]


@pytest.mark.parametrize(("text", "secret"), TOKEN_VARIANTS)
def test_a_token_format_in_its_variant_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", TOKEN_VARIANTS_KEPT)
def test_a_token_variant_shape_without_a_token_stays(text: str) -> None:
    assert_kept(text)


# The secret word on a sibling key or on the block: the value is under "value" or
# "default" a few lines on. Before: stored verbatim.
SIBLING_KEYS = [
    (
        '{\n  "db_password": {\n    "sensitive": true,\n    "type": "string",\n'
        '    "value": "walnut@683@Orbit$"\n  }\n}',
        "walnut@683@Orbit$",
    ),
    ('{"api": {"sensitive": true, "type": "string", "value": "Tf7outputvalue"}}', "Tf7outputvalue"),
    ('variable "db_password" {\n  default = "tenrag!2168!ognaT"\n}', "tenrag!2168!ognaT"),
    (
        'variable "nextauth_secret" {\n  type      = string\n  sensitive = true\n'
        '  default   = "bmV4dGF1dGhzZWNyZXRmYWtlMDE="\n}',
        "bmV4dGF1dGhzZWNyZXRmYWtlMDE=",
    ),
    ('variable "oauth_client_secret" { default = "GOCSPX-Zq9fakeclientsecret01" }', "Zq9fake"),
    (
        "$ aws ssm get-parameter --name /prod/stripe --with-decryption\n{\n"
        '    "Parameter": {\n        "Name": "/prod/stripe",\n        "Type": "SecureString",\n'
        '        "Value": "AMrMVs5KZPyqWDdRUmcGLhSa5TFbuCbT",\n        "Version": 3\n    }\n}',
        "AMrMVs5KZPyqWDdRUmcGLhSa5TFbuCbT",
    ),
    ('{\\"Type\\": \\"SecureString\\", \\"Value\\": \\"Ssm7escaped\\"}', "Ssm7escaped"),
    # "value" before "sensitive" (29th session's probe): the sibling is read both ways.
    (
        '{"db_password": {"value": "Cedar@4410@Mint", "type": "string", "sensitive": true}}',
        "Cedar@4410@Mint",
    ),
    (
        '{\n  "api": {\n    "value": "Tf8outputvalue",\n    "sensitive": true\n  }\n}',
        "Tf8outputvalue",
    ),
    ('{\\"value\\": \\"Tf9escaped\\", \\"sensitive\\": true}', "Tf9escaped"),
]

SIBLING_KEYS_KEPT = [
    '{"endpoint": {"sensitive": false, "type": "string", "value": "https://api.example.net"}}',
    '{"sensitive": true, "type": "string"}\n{"name": "x", "value": "plain-value-7"}',
    'variable "db_host" {\n  default = "db.internal"\n}',
    'variable "db_password" {\n  type = string\n}\nlocals { default = "x7" }',
    'variable "db_password" {\n  default = var.fallback_password\n}',
    'variable "api_token" {\n  default = null\n}',
    '{"Name": "/prod/region", "Type": "String", "Value": "eu-west-1"}',
    "a SecureString parameter has a Value only with --with-decryption",
    '{"endpoint": {"value": "https://api.example.net", "type": "string", "sensitive": false}}',
    '{"name": "x", "value": "plain-value-7"}, {"sensitive": true}',
    '{"a": {"value": "plain-value-8"}, "b": {"sensitive": true, "type": "string"}}',
]


@pytest.mark.parametrize(("text", "secret"), SIBLING_KEYS)
def test_a_value_whose_secret_word_is_on_a_sibling_key_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", SIBLING_KEYS_KEPT)
def test_a_sibling_key_shape_without_a_secret_stays(text: str) -> None:
    assert_kept(text)


# A password a tool takes as a word of its command line. Before: stored as typed.
TOOL_PASSWORDS = [
    ("rabbitmqctl add_user worker Lumen!5210!Tango", "Lumen!5210!Tango"),
    ("sudo rabbitmqctl change_password worker Rb7secretx && echo ok", "Rb7secretx"),
    ('rabbitmqctl -n rabbit@mq1 add_user "ci bot" "Rb8 secret"', "Rb8 secret"),
    ("net use Z: \\\\fs\\share /user:CORP\\jdoe garnet#6020#cobalt?", "garnet#6020#cobalt?"),
    ("NET USE \\\\fs\\share Nu7secretx /USER:CORP\\jdoe /persistent:no", "Nu7secretx"),
    ("net use Z: \\\\fs\\share /persistent:yes /u:me Nu6secretx", "Nu6secretx"),
    ("net user alice Nu8secretx /add", "Nu8secretx"),
    ("rabbitmqctl authenticate_user worker Ivory!3310!Dune", "Ivory!3310!Dune"),
    ("rabbitmqctl -n rabbit@mq1 authenticate_user 'ci bot' Rb9secretx", "Rb9secretx"),
]

TOOL_PASSWORDS_KEPT = [
    "rabbitmqctl add_user worker",
    "rabbitmqctl list_users && rabbitmqctl set_user_tags admin administrator",
    'rabbitmqctl add_user worker "$RABBIT_PASSWORD"',
    "rabbitmqctl authenticate_user worker",
    "rabbitmqctl clear_password worker && rabbitmqctl delete_user worker",
    "net use Z: \\\\fs\\share /user:CORP\\jdoe *",
    "net use Z: \\\\fs\\share /user:me /persistent:yes",
    "net use Z: /delete",
    "net use \\\\srv\\ipc$ %PASSWORD% /user:me",
    "net user alice /domain",
    "net user alice *",
]


@pytest.mark.parametrize(("text", "secret"), TOOL_PASSWORDS)
def test_a_password_a_tool_takes_as_an_argument_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", TOOL_PASSWORDS_KEPT)
def test_a_tool_command_without_a_password_stays(text: str) -> None:
    assert_kept(text)


# The end of a private key whose BEGIN line a tool's output limit cut off, and the
# Authorization header written without a colon or inside a code string. Before: stored.
KEY_BODY = "MIIEowIBAAKCAQEAwJGlsw9vQ8ZzqF4pT3kLm2Nq7Rb5Xc1Yd8Ve6Wf0Ug2Th4Si9Rj3"
HEADER_AND_TAIL = [
    (f"[... 20 lines omitted ...]\n{KEY_BODY}\n{KEY_BODY[::-1]}\n-----END RSA PRIVATE KEY-----",
     KEY_BODY[:24]),
    (f"{KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----\n", KEY_BODY[:24]),
    (f"key: |\n    {KEY_BODY}\n    -----END RSA PRIVATE KEY-----", KEY_BODY[:24]),  # YAML
    (f"{KEY_BODY}\r\n{KEY_BODY}\r\n-----END RSA PRIVATE KEY-----\r\n", KEY_BODY[:24]),
    ("axios.defaults.headers.common['Authorization'] = `Bearer Tango@6463@Quartz?`;",
     "Tango@6463@Quartz"),
    ('proxy_set_header Authorization "Basic YWRtaW46Y29iYWx0LjE1MjQuVGFuZ28k";',
     "YWRtaW46Y29iYWx0LjE1"),
    ("RequestHeader set Authorization 'Bearer Qx7-tok.en_value99'", "Qx7-tok.en_value99"),
]  # fmt: skip
HEADER_AND_TAIL_KEPT = [
    "-----END RSA PRIVATE KEY-----",  # nothing before it to mask
    "just prose\n-----END CERTIFICATE-----",
    "The Authorization 'header' is required for every call",
    'Set the Authorization "Bearer" scheme in the client',
    "see -----END RSA PRIVATE KEY----- in the docs",
]


@pytest.mark.parametrize(("text", "secret"), HEADER_AND_TAIL)
def test_a_key_tail_and_an_authorization_header_without_a_colon_are_masked(
    text: str, secret: str
) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", HEADER_AND_TAIL_KEPT)
def test_an_end_line_or_an_authorization_word_alone_stays(text: str) -> None:
    assert_kept(text)


# What a command that prints a secret printed after its "$ command" line. Before: stored.
REVEALED_OUTPUTS = [
    ("$ kubectl get secret db -o jsonpath='{.data.password}' | base64 -d\ncobalt#8433#velvet?",
     "cobalt#8433#velvet?"),
    ("$ op item get 'Prod DB' --fields password --reveal\nQuartz-7731-harbor",
     "Quartz-7731-harbor"),
    ("$ pass show work/ldap\nmaple4180Lumen&\nurl: ldap.example", "maple4180Lumen&"),
    ('$ bw get password "Grafana admin"\nriver4957Tango!', "river4957Tango!"),
    ("$ vault kv get -field=password secret/db\nVlt-9921-orbit", "Vlt-9921-orbit"),
    ("$ gcloud secrets versions access latest --secret=db-pass\nGcp-4471-walnut",
     "Gcp-4471-walnut"),
    ("$ security find-generic-password -s api -w\nKc-5512-falcon", "Kc-5512-falcon"),
    ("$ gh auth token\ngho_16C7e42F292c6912E7710c838347Ae178B4a", "gho_16C7e42F292c6912"),
]  # fmt: skip

# The same family, as the 29th session's probe wrote it and the CLIs around it: a
# pipeline stage between the secret and base64, a secret store's fetch in any output
# form, config stores, decryption to the terminal. Before: stored.
REVEALING_COMMANDS = [
    "kubectl get secret db -o json | jq -r .data.password | base64 --decode",
    "kubectl get secret db -n prod -o json | jq -r '.data[\"password\"]' | tr -d '\\n' | base64 -d",
    "kubectl get secret db -o jsonpath='{.data.password}'",
    "kubectl get secret db -o go-template='{{.data.password | base64decode}}'",
    "kubectl view-secret db password",
    # a dotenv file encoded (28th-session held-out corpus: `$ base64 .env` then its output)
    "base64 .env",
    "base64 -w0 config/prod.env",
    "cat .env.local | base64",
    "base64 < .envrc",
    "az keyvault secret show --vault-name kv --name dbpw --query value -o tsv",
    "az keyvault secret show --vault-name kv --name dbpw",
    "heroku config:get DATABASE_PASSWORD -a shop",
    "netlify env:get STRIPE_SECRET_KEY",
    "aws ssm get-parameter --name /prod/db --with-decryption --query Parameter.Value --output text",
    "aws ssm get-parameters --names /prod/db --with-decryption --output text",
    "aws ssm get-parameters-by-path --path /prod --recursive --with-decryption",
    "aws secretsmanager get-secret-value --secret-id prod/db --output text",
    "aws secretsmanager get-secret-value --secret-id prod/db --query SecretString --output text",
    "aws kms decrypt --ciphertext-blob fileb://pw.enc --query Plaintext --output text",
    "aws ecr get-login-password --region eu-west-1",
    "az account get-access-token --query accessToken -o tsv",
    "doppler secrets get DB_PASSWORD",
    "doppler secrets --project api --config prd",
    "doppler secrets download --no-file --format env",
    "gopass otp infra/github",
    "op inject -i config.tpl.yml",
    "gh auth status --show-token",
    "sops -d secrets.enc.yaml",
    "sops decrypt secrets.enc.json",
    "age -d -i key.txt secrets.env.age",
    "age --decrypt -i ~/.age/key.txt creds.age",
    "age -o - -d creds.age",
    "gpg -d ~/.password-store/prod/db.gpg",
    "gpg --batch --quiet --decrypt secrets.json.gpg",
    "gpg2 -qd ~/.authinfo.gpg",
    "ansible-vault view group_vars/prod/vault.yml",
    "ansible-vault decrypt vault.yml --output -",
]
# Commands that list names, store a value, print another field or do something else.
QUIET_COMMANDS = [
    "kubectl get secrets",
    "kubectl get secrets -o jsonpath='{.items[*].metadata.name}'",
    "kubectl describe secret db",
    "kubectl create secret generic db --from-env-file=.env",
    "az keyvault secret list --vault-name kv",
    "az keyvault secret show --vault-name kv --name dbpw --query id -o tsv",
    "az keyvault secret set --vault-name kv --name dbpw --file pw.txt",
    "heroku config:set DEBUG=1",
    "heroku config:unset OLD_KEY -a shop",
    "heroku apps:info",
    "aws ssm put-parameter --name /prod/db --type SecureString --value file://pw.txt",
    "aws ssm get-parameter --name /prod/region",
    "aws ssm get-parameter --name /prod/db --with-decryption --query Parameter.Version",
    "aws ssm describe-parameters",
    "aws secretsmanager list-secrets",
    "aws secretsmanager get-secret-value --secret-id prod/db --query Name --output text",
    "aws secretsmanager create-secret --name prod/db --secret-string file://s.json",
    "doppler secrets set DEBUG=1",
    "doppler secrets delete OLD",
    "doppler setup",
    "fly secrets list",
    "fly secrets set DB_PASSWORD=$PW",
    "gh auth status",
    "sops -e secrets.yaml > secrets.enc.yaml",
    "sops updatekeys secrets.enc.yaml",
    "age -e -r age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p secrets.env",
    "gpg --list-secret-keys",
    "gpg --import key.asc",
    "curl -H 'Cache-Control: max-age=0' -d '{}' https://api.example.net",
    "docker run -e AGE=3 -d nginx",
    "ansible-vault encrypt vault.yml",
    "ansible-vault decrypt vault.yml",
    "base64 .env.example",  # a template's placeholders
    "base64 logo.png",
    "cat src/environment.ts | base64",
]
REVEALED_KEPT = [
    "$ kubectl get pods | base64 -d\nbm90IGEgc2VjcmV0",
    "$ git show HEAD\ncommit 1a2b3c4d",
    "$ pass show\n",
    "Use pass show to print an entry",
    "$ op item list\nProd DB  Login",
]


@pytest.mark.parametrize(("text", "secret"), REVEALED_OUTPUTS)
def test_what_a_command_that_prints_a_secret_printed_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", REVEALED_KEPT)
def test_output_of_a_command_that_prints_no_secret_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize("command", REVEALING_COMMANDS)
def test_what_the_family_of_revealing_commands_printed_is_masked(command: str) -> None:
    assert_masked(f"$ {command}\nCobalt_1188_Heron\n", "Cobalt_1188_Heron")
    # A captured Bash call: the gate of the hook path lets it through, the rule takes it.
    assert reveals_secret("Bash", {"command": command})


@pytest.mark.parametrize("command", QUIET_COMMANDS)
def test_a_command_of_the_family_that_prints_no_secret_is_not_withheld(command: str) -> None:
    assert not reveals_secret("Bash", {"command": command})
    assert not secret_rules.reveals_secret(command)
    text = f"$ {command}\nQuiet-2291-output"
    assert scrub(text).endswith("\nQuiet-2291-output")
    assert secret_rules.mask(text, gated=False).endswith("\nQuiet-2291-output")


# The 30th session's leftovers of the held-out corpus, each family by its rule, with
# fresh variants; before, every one was stored (a query's other parameters were lost).
LICENSE_KEYS = [
    ("      - license_key=CVRSN-3EFJY-OT4T5-KP6BK-N2WZV", "CVRSN-3EFJY-OT4T5-KP6BK-N2WZV"),
    ("LICENSE=HK92J-QP4MX-7WR3T-NB8ZC-5VLDG", "HK92J-QP4MX-7WR3T-NB8ZC-5VLDG"),
    ('license: "9KX2T-PQ7MN-4HV8B-R3WJC-6YDFG"', "9KX2T-PQ7MN-4HV8B-R3WJC-6YDFG"),
    ("licence_key: HJ4K-9PLM-2QWX-7ZRT", "HJ4K-9PLM-2QWX-7ZRT"),
    ("serial: 8HJK2-PL9MN-4QWER-7TYUI-3ZXCV", "8HJK2-PL9MN-4QWER-7TYUI-3ZXCV"),
    ('"product_key": "N7GHK-4PQ2M-XT9WR-B3JVC-8YLDF"', "N7GHK-4PQ2M-XT9WR-B3JVC-8YLDF"),
    ("licenseKey = 'ZK4P-9QX7-MW2R-T8NB-3JHC'", "ZK4P-9QX7-MW2R-T8NB-3JHC"),
    ("SUBLIME_LICENSE=EA7E-812345-A4B9C2D1-0F3E5A7B", "EA7E-812345-A4B9C2D1-0F3E5A7B"),
]
LICENSE_KEPT = [
    "license: MIT",
    "LICENSE=GPL-3.0-or-later",
    "license: CC-BY-SA-4.0",
    "serial: /dev/ttyUSB0",
    "serial: 2024-01-15-0001",
    "license_key: XXXXX-XXXXX-XXXXX-XXXXX-XXXXX",
    "product_key: AAAAA-BBBBB-CCCCC-DDDDD-EEEEE",
    "serial_number: C02XK0ABJG5H",
]
VENDOR_UUIDS = [
    ('ENV["SNYK"] = "12f89ff5-b068-227b-2cb1-b9b0e6527453"  # ruby',
     "12f89ff5-b068-227b-2cb1-b9b0e6527453"),
    ("os.environ['SNYK'] = '0a1b2c3d-4e5f-6789-abcd-ef0123456789'",
     "0a1b2c3d-4e5f-6789-abcd-ef0123456789"),
    ('process.env.HEROKU = "5f2d9c1e-8b7a-4c3d-9e1f-2a3b4c5d6e7f"',
     "5f2d9c1e-8b7a-4c3d-9e1f-2a3b4c5d6e7f"),
    ("export SNYK_CI=9b8a7c6d-5e4f-4321-a0b9-c8d7e6f5a4b3", "9b8a7c6d-5e4f-4321-a0b9-c8d7e6f5a4b3"),
    ('"postmark": "1d2c3b4a-5f6e-4d7c-8b9a-0f1e2d3c4b5a"', "1d2c3b4a-5f6e-4d7c-8b9a-0f1e2d3c4b5a"),
    ("SAUCE_ACCESS=e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b", "e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b"),
]  # fmt: skip
VENDOR_UUIDS_KEPT = [
    'ENV["REQUEST_ID"] = "7c1e4b2a-9f3d-4e8a-b6c5-1d2e3f4a5b6c"',
    'ENV["SNYK_ORG_ID"] = "7c1e4b2a-9f3d-4e8a-b6c5-1d2e3f4a5b6c"',
    "SNYK_ORG=7c1e4b2a-9f3d-4e8a-b6c5-1d2e3f4a5b6c",
    "codecov_project_uuid: 6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d",
    "snyk project 8f7e6d5c-4b3a-4291-8f0e-d1c2b3a49586 was scanned",
    'ENV["SNYK"] = "00000000-0000-0000-0000-000000000000"',
]
QUERY_KEYS = [
    ("requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://api.weather"
     ".example/v3/forecast?city=Paris&appid=bxYSXJhpVEYnQlrNhYg7fhk0UJu1Iv1o&units=metric",
     "bxYSXJhpVEYnQlrNhYg7fhk0UJu1Iv1o"),
    ("curl 'https://openexchangerates.org/api/latest.json?app_id=7d3b9f1a5c2e8d4b6f0a9c3e1b7d5f2a'",
     "7d3b9f1a5c2e8d4b6f0a9c3e1b7d5f2a"),
    ("https://api.map.example/geocoding/v3/?address=x&ak=Xk3mQ8vR2xLp9zWt4Yb7Nc5Hd6Jf1Ge0",
     "Xk3mQ8vR2xLp9zWt4Yb7Nc5Hd6Jf1Ge0"),
]  # fmt: skip
QUERY_KEPT = [
    "https://graph.facebook.com/oauth?app_id=1234567890123&redirect_uri=x",
    "https://example.com/?appid=YOUR_API_KEY&units=metric",
    "https://api.edamam.com/search?q=apple&app_id=a1b2c3d4",
    "https://example.com/x?app_id=com.example.myapp",
    "https://example.com/search?q=token&page=2",
]
# A key in a URL's query masks its value only: the parameters after it stay.
QUERY_VALUES = [
    ("401 for url https://api.example.com/v1?x=1&api_key=Qm7Xk2Lp9RtVw4Yb8Nz3Hc6J&page=2",
     "Qm7Xk2Lp9RtVw4Yb8Nz3Hc6J", "&page=2"),
    ("https://example.com/cb?access_token=Pq7Lz2Xk9mRt4Wv8Yb3N&state=xyz#frag",
     "Pq7Lz2Xk9mRt4Wv8Yb3N", "&state=xyz#frag"),
    ("POST /login body: username=admin&password=maple%214577%21Falcon%24&remember=1",
     "maple%214577", "&remember=1"),
    ("https://x.example/login?user=bob&password=hunter&next=/home", "hunter", "&next=/home"),
    ("https://x.example/login?password=hunter2#top", "hunter2", "#top"),
    ("https://example.com/api?apikey=f00dbabe1234deadbeef5678cafe9012&format=json",
     "f00dbabe1234deadbeef5678cafe9012", "&format=json"),
]  # fmt: skip
RPC_PATH_KEYS = [
    ("provider = JsonRpcProvider('https://mainnet.infura.io/v3/bd214b571c952831bef637aed1a09093')",
     "bd214b571c952831bef637aed1a09093"),
    ("wss://mainnet.infura.io/ws/v3/3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f",
     "3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f"),
    ("ALCHEMY_URL=https://polygon-mumbai.g.alchemy.com/v2/kP9_zQ2-mW7xR4tY8vN3bL6hJ1cD5fG0",
     "kP9_zQ2-mW7xR4tY8vN3bL6hJ1cD5fG0"),
    ("curl https://eth-mainnet.g.alchemy.com/nft/v3/Mq2Wm8Xk3Lp7Rt4Vb9Yn1Hc6Jd0Fg5Ae/getNFTs",
     "Mq2Wm8Xk3Lp7Rt4Vb9Yn1Hc6Jd0Fg5Ae"),
    ("https://sly-dawn-bird.quiknode.pro/3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e/",
     "3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e"),
    ("https://rpc.ankr.com/eth/8f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a2918",
     "8f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a2918"),
]  # fmt: skip
RPC_PATH_KEPT = [
    "https://mainnet.infura.io/v3/YOUR_PROJECT_ID",
    "https://eth-mainnet.g.alchemy.com/v2/demo",
    "https://eth-mainnet.g.alchemy.com/v2/your-api-key",
    "https://example.com/v3/9aa3d95b3bc440fa88ea12eaa4456161",
    "https://docs.alchemy.com/reference/api-overview",
]
WRAPPED_TOKENS = [
    ("GITHUB_TOKEN=ghp_WztMRjgQjnSAjoZm\npmbG2RA7FDjGmxziFO6y\n", "pmbG2RA7FDjGmxziFO6y"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-tkvYEeaIbNpmzSNsI1f1mktQublcsrzOuLU-jLNT4IayCx0XVoThX0AWsj1"
     "jSvMf8vR\nNPGWCLz6xMxmRwD5GyMuJvVHk5AA", "NPGWCLz6xMxmRwD5GyMuJvVHk5AA"),
    ('token = "Zq8Wm3Xk7Lp2Rt9Vb4Yn6Hc1\nJd5Fg0Ae2Bc3"', "Jd5Fg0Ae2Bc3"),
    ("SECRET_KEY='b7e4c1f9a2d8e5c3\nf6a0d9b2e8c5f1a4'", "f6a0d9b2e8c5f1a4"),
    ("client_secret=Gq2Wm8Xk3Lp7Rt4Vb9Yn1Hc6Jd0Fg5\nAe7Bx2Cy3Dz4\r\n", "Ae7Bx2Cy3Dz4"),
]  # fmt: skip
WRAPPED_KEPT = [  # the line after a masked value that is no piece of it
    ("API_TOKEN=Xk29abcQ81mZpLw7TyR3\nDEBUG=true\n", "\nDEBUG=true\n"),
    ("token=Xk29abcQ81mZpLw7TyR3\nPython3\n", "\nPython3\n"),
    ("SECRET=abcd1234\nsha256sum\n", "\nsha256sum\n"),
    ("TOKEN=Xk29abcQ81mZpLw7TyR3\n2024-01-15\n", "\n2024-01-15\n"),
    ("token: Xk29abcQ81mZpLw7TyR3\nmain.py\n", "\nmain.py\n"),
]
# Output of revealing commands the family did not know, and values stored from the
# command line into a secret store.
REVEALING_MORE = [
    "terraform output -raw db_password",
    "terraform output -json admin_token",
    "terraform -chdir=infra output api_key",
    "railway variables",
    "railway variables --kv -s api",
    "vault kv get secret/prod/api",
    "vault kv get -format=json secret/prod/api",
    "vault read database/creds/readonly",
    "vercel env pull /dev/stdout",
]
QUIET_MORE = [
    "terraform output -raw instance_ip",
    "terraform output -json vpc_id",
    "terraform plan",
    "railway variables --set DEBUG=1",
    "railway up",
    "vercel env pull .env.local",
    "vault kv list secret/",
    "vault status",
]
STORED_VALUES = [
    ("az keyvault secret set --vault-name kv --name db --value Zx5kq9LmOrbit", "Zx5kq9LmOrbit"),
    ('az keyvault secret set --name db --vault-name kv --value "Zx6 kq9 Lm"', "Zx6 kq9 Lm"),
    ("aws secretsmanager put-secret-value --secret-id db --secret-string Zy8kq9Lm", "Zy8kq9Lm"),
    ("aws ssm put-parameter --name /db --type SecureString --value Zz1kq9LmOrbit",
     "Zz1kq9LmOrbit"),
]  # fmt: skip
STORED_KEPT = [
    "az keyvault secret set --vault-name kv --name db --value $DB_PASSWORD",
    "aws secretsmanager create-secret --name prod/db --secret-string file://s.json",
    "aws ssm put-parameter --name /region --type String --value eu-west-1",
]
# A passphrase of plain words: a YAML or INI value runs to the end of its line, a
# dotenv value too (a line beside it is NAME=…); a sentence about the secret stays.
PASSPHRASES = [
    ("passphrase: correct horse battery staple", "horse battery staple"),
    ("  ssh_passphrase: lunar pickle tractor sundae", "pickle tractor sundae"),
    ("db_password = mellow otter 88 violin", "otter 88 violin"),
    ("APP_ENV=prod\nWIFI_PASSWORD=purple monkey dishwasher 42\n", "monkey dishwasher"),
    ("GPG_PASSPHRASE=amber falcon quilt river\nLOG_LEVEL=info\n", "falcon quilt river"),
]
PASSPHRASES_KEPT = [
    "password: must be at least 8 characters",
    "token: sent in the Authorization header",
    "password: changes every 90 days",
    "passphrase: leave empty for no passphrase",
    "  password: ask the admin for it",
]
COMMAND_AFTER_VARIABLE = [  # NAME=x then the command it is set for: the command stays
    ("PGPASSWORD=Xk29abcQ81 psql mydb backup", " psql mydb backup"),
    ("DB_PASSWORD=Xk29abcQ81 npm run start", " npm run start"),
]


@pytest.mark.parametrize(
    ("text", "secret"),
    LICENSE_KEYS + VENDOR_UUIDS + QUERY_KEYS + RPC_PATH_KEYS + WRAPPED_TOKENS + STORED_VALUES
    + PASSPHRASES,
)  # fmt: skip
def test_a_leftover_of_the_held_out_corpus_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize(
    "text",
    LICENSE_KEPT + VENDOR_UUIDS_KEPT + QUERY_KEPT + RPC_PATH_KEPT + STORED_KEPT + PASSPHRASES_KEPT,
)
def test_a_leftover_shape_without_a_secret_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "kept"), WRAPPED_KEPT + COMMAND_AFTER_VARIABLE)
def test_what_follows_a_masked_value_and_is_no_piece_of_it_stays(text: str, kept: str) -> None:
    out = scrub(text)
    assert out.endswith(kept) and "[REDACTED:" in out, out
    assert secret_rules.mask(text, gated=False) == out


@pytest.mark.parametrize(("text", "secret", "rest"), QUERY_VALUES)
def test_a_key_in_a_query_masks_its_value_only(text: str, secret: str, rest: str) -> None:
    assert_masked(text, secret)
    assert scrub(text).endswith(rest)


@pytest.mark.parametrize("command", REVEALING_MORE)
def test_more_revealing_commands_have_their_output_masked(command: str) -> None:
    assert_masked(f"$ {command}\nCobalt_1188_Heron\n", "Cobalt_1188_Heron")
    assert reveals_secret("Bash", {"command": command})


@pytest.mark.parametrize("command", QUIET_MORE)
def test_more_quiet_commands_keep_their_output(command: str) -> None:
    assert not reveals_secret("Bash", {"command": command})
    assert_kept(f"$ {command}\nQuiet-2291-output")
