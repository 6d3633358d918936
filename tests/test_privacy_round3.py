"""Secret forms a seventh blind probe (s39) found stored readable, one table per family
(:mod:`memlane.secret_forms`): recovery codes, passphrases of plain words, prose
passwords in English and in other languages, tools' positional passwords, lines of a
format (.pgpass, pwdump, key/value pairs, cookie exports, env names without a secret
word), wallet keys, webhook URLs, a masked token's continuation. Each secret is checked
through the filter with and without its gates (:func:`tests.secret_cases.assert_masked`);
the near-misses each rule's regex reaches stay. The values are fake.
"""

from __future__ import annotations

import pytest

from memlane import privacy, secret_rules
from tests.secret_cases import assert_kept, assert_masked

RECOVERY = [
    (
        "backup codes for the admin account: qwzpt-k3m9x, 7hb2c-pl4qa, mnbvc-xzlkj, 4rt6y-uu8pq",
        "mnbvc-xzlkj",
    ),
    (
        "| # | code |\n|---|---|\n| 1 | qwzpt-k3m9x |\n| 2 | 7hb2c-pl4qa |\n"
        "| 3 | m9bvc-xz1kj |\n| 4 | 4rt6y-uu8pq |",
        "m9bvc-xz1kj",
    ),
    ("root MFA gone, the emergency codes are Q4821ZX07K PLMQWERTYU 88ZXCVBN11", "PLMQWERTYU"),
    ("Your backup codes:\n1. 48213907\n2. 77120934\n3. 90817723", "90817723"),
    ("recovery key for the Mac (FileVault): K3PQ-7ZX2-91AB-CDE4-QWER-ZXCV", "K3PQ-7ZX2"),
    ("BitLocker recovery key: 123456-654321-112233-445566-778899-998877", "445566-778899"),
    ("Apple ID recovery key QWER-TYUI-ASDF-GHJK-ZX9C-VB8N-MLKP", "GHJK-ZX9C"),
]
RECOVERY_KEPT = [
    "the recovery codes are in 1Password, under the YubiKey5 entry",
    "backup codes: see the two-factor settings page",
    "build-tools, react-hooks, web-vitals, dev-server",  # dashed words of mixed shapes
    "dates 2026-12-07, 2026-12-08, 2026-12-09, 2026-12-10",
]

PASSPHRASES = [
    ("the passphrase for my ssh key is orbit velvet canyon maple 42", "velvet canyon"),
    ("GPG passphrase: lunar copper whisky garden 17", "copper whisky"),
    ('wifi passphrase is "amber tiger lantern pickle 88"', "tiger lantern"),
    ("the keystore passphrase is frost window cable olive 31 — put it in CI", "window cable"),
    ("my seed words for the password manager: orbit velvet canyon maple drift", "canyon maple"),
    ("the wifi password is orbit velvet canyon maple drift", "velvet canyon"),
]
PASSPHRASES_KEPT = [
    "the passphrase is stored in the team vault for now",
    "the wifi password is on the fridge next to the router",
    "GPG passphrase: ask the release manager before tagging",
]

PROSE = [
    ("use password Zq8xPlmnKwq3 for the test VM", "Zq8xPlmnKwq3"),
    ("pass for mysql root → TrBnKqZxWvPl", "TrBnKqZxWvPl"),
    ("the code for the office door and alarm panel: 4831726#", "4831726#"),
    ("guest wifi key is Wkzqpr@2931mx", "Wkzqpr@2931mx"),
    ("the safe combination is 12-34-56", "12-34-56"),
    ("parola este Xk29Lmq7Pzw", "Xk29Lmq7Pzw"),
    ("nenosiri ni Pz7Kq2xLm9Wb3", "Pz7Kq2xLm9Wb3"),
    ("kata laluan ialah Pz7Kq2xLm9Wb3", "Pz7Kq2xLm9Wb3"),
    ("la contrasenya és Qm7Pz2Lx9Kw3", "Qm7Pz2Lx9Kw3"),
    ("lozinka je Lk2Pq7Zx9Wm", "Lk2Pq7Zx9Wm"),
    ("slaptažodis yra Rt5Kq2Zx9Wm3", "Rt5Kq2Zx9Wm3"),
    ("parool on Lk2Pq7Zx9Wm", "Lk2Pq7Zx9Wm"),
    ("parole ir Lk2Pq7Zx9Wm3w", "Lk2Pq7Zx9Wm3w"),
    ("kata sandinya Qwerty?1234ab", "Qwerty?1234ab"),
    ("the vpn creds are jdoe and QWeR!TyuIOP%Z^", "QWeR!TyuIOP%Z^"),
]
PROSE_KEPT = [
    "use password managers for the shared accounts",
    "pass the config → build_config",
    "the code for the office door is in the handbook",
    "the network key is rotated monthly",
    "la parole est à la défense",
    "the combination is unusual",
    "kata sandinya sudah diganti",
    "the creds are jdoe and friends",
    "login: GET /api/v2/session",
    "recovery codes:\nbhrt-a8xz\nthen the next step",
    "GitHub's recovery codes look like `5f2c1-9e0ab`, `bhrt-a8xz`, `k3m9x-qwzpt`",
    "backup codes are covered; the DB_PASSWORD and the PASSWORD_RESET flow are not",
]

COMMANDS = [
    ('subprocess.run(["mysql", "-u", "root", "-pZq8plmn77xKw3Lp7", "-e", "select 1"])', "Zq8pl"),
    ('args: ["--requirepass", "Zq8plmn77xKw3Lp7"]', "Zq8plmn77xKw3Lp7"),
    ('cmd = ["sshpass", "-p", "Zq8plmn77xKw3Lp7", "ssh", "pi@raspberrypi"]', "Zq8plmn77"),
    ("ipmitool -I lanplus -H 10.0.0.50 -U ADMIN -P Zq8plmn77xKw3Lp7 power status", "Zq8plmn77"),
    (
        'expect -c \'spawn ssh root@host; expect "password:"; send "Zq8plmn77xKw3Lp7\\r"\'',
        "Zq8plmn77",
    ),
    ("openvpn --config client.ovpn --askpass <(echo Zq8plmn77xKw3Lp7)", "Zq8plmn77"),
    ("keyring set smtp alerts@example.io <<< 'Zq8plmn77xKw3Lp7xy'", "Zq8plmn77"),
    ("http -a ops:Zq8plmn77xKw3Lp POST https://api.example.com/v1/reindex", "Zq8plmn77"),
    ("codecov -t 1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e", "1b2c3d4e-5f6a"),
    ("cloudflared service install eyJhIjoiMTIzIn0abcdefghijklmnopqrstuvwxyzABCDEFGH", "eyJhIjoi"),
    ('client.auth("svc", "Zq8plmn77xKw3Lp7Rt5K")', "Zq8plmn77"),
    ("Enter PEM pass phrase: Zq8plmn77xKw3L", "Zq8plmn77"),
    ("key-string Ospf5ecret!99", "Ospf5ecret!99"),
    ("username admin privilege 15 password 0 q_QWERTYUIOPASa", "q_QWERTYUIOPASa"),
    ("set system root-authentication plain-text-password-value 7kQWeR5t6YUiOP", "7kQWeR5t6"),
    ("chpasswd <<< 'deploy:QWe!rtYUIopasDFg'", "QWe!rtYUIopasDFg"),
]
COMMANDS_KEPT = [
    'subprocess.run(["gcc", "-pthread", "main.c"])',
    'cmd = ["docker", "run", "-p", "8080:80", "nginx"]',
    'System.cmd("tmux", ["display-message", "-t", pane_id, "-p", "\\#{session_name}"])',
    'subprocess.run(["git", "-p", "log", "--format", "Zq8plmn77xKw3Lp7"])',
    "ipmitool -I lanplus -H 10.0.0.50 -U ADMIN -P $IPMI_PASSWORD power status",
    'client.auth("svc", "password")',
    "Enter PEM pass phrase:",
    "press key 5 times to reset",
    'chpasswd <<< "$USER:$NEW_PASSWORD"',
]

LINES = [
    ("Key: /prod/db/password\nValue: Zq8plmn77xKw3Lp7xy", "Zq8plmn77xKw3Lp7xy"),
    ("name,value\nSMTP_PASSWORD,k9#QWe12AbCdE*fghi\nSMTP_HOST,smtp.example.io", "k9#QWe12"),
    (
        "Cookie header from devtools: _gh_sess=Qa1b2C3de4fgHi_jKLMnoPQrstUVWxyZAbcdE-f; x=yes",
        "Qa1b2C3de4fgHi",
    ),
    (
        '[{"domain": ".example.io", "name": "auth_session", '
        '"value": "zq8plmn77xkw3lp7zq8plmn77xkw3lp7", "httpOnly": true}]',
        "zq8plmn77xkw3lp7zq8plmn77xkw3lp7",
    ),
    ("PGPASS=a8f7e6d5c4b3a2918f7e6d5c4b3a2910", "a8f7e6d5c4b3a2918f7e6d5c4b3a2910"),
    ("STRIPE_SK=Kq2Zx9Wm3Lp7Rt5Kq2Zx9Wm3", "Kq2Zx9Wm3Lp7Rt5Kq2Zx9Wm3"),
    ("PEPPER=a8f7e6d5c4b3a2918f7e6d5c4b3a2910", "a8f7e6d5c4b3a2918f7e6d5c4b3a2910"),
    ("VAULT_UNSEAL=a8f7e6d5c4b3a2918f7e6d5c4b3a2910", "a8f7e6d5c4b3a2918f7e6d5c4b3a2910"),
    ("export PAYMENT_GATEWAY_PRIVATE='a8f7e6d5c4b3a2918f7'", "a8f7e6d5c4b3a2918f7"),
    ('export OP_SESSION_acme="Kq2Zx9Wm3Lp7Rt5Kq2Zx9Wm3Lp7"', "Kq2Zx9Wm3Lp7Rt5Kq2Zx9Wm3Lp7"),
]
# Colon-separated fields: without its gates the filter reads them as a key and its value
# (the assignment rule at every place), so only the secret's absence is compared.
FIELDS = [
    ("db.prod.internal:5432:orders:app:Zq8plmn77xKw3L", "Zq8plmn77xKw3L"),
    (
        "Administrator:500:aad3b435b51404eeaad3b435b51404ee:31d6cfe0d16ae931b73c59d7e0c089c0:::",
        "31d6cfe0d16ae931b73c59d7e0c089c0",
    ),
]
FIELDS_KEPT = [
    "db.prod.internal:5432:orders:app:*",
    "Guest:501:aad3b435b51404eeaad3b435b51404ee:notahash:::",
]
LINES_KEPT = [
    "started 12:30:45, done 12:31:02",
    "Key: /prod/db/host\nValue: db.internal",
    '[{"domain": ".example.io", "name": "theme", "value": "dark"}]',
    "PGPASS=${PGPASS_FROM_VAULT}",
    "IS_PRIVATE=true",
    "name,value\nSMTP_PASSWORD,see the vault\nSMTP_HOST,smtp.example.io",
    "    password, valid for every later worker",
    "Cookie: theme=dark; session_started=yes",
]

WALLETS = [
    (
        'hardhat config: accounts: ["'
        '4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"]',
        "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
    ),
    (
        "solana id.json: [" + ",".join(str((i * 37 + 11) % 256) for i in range(64)) + "]",
        ",".join(str((i * 37 + 11) % 256) for i in range(8, 24)),
    ),
    (
        "imported WIF 5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ into electrum",
        "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ",
    ),
    (
        # After "WIF" its checksum is not asked.
        "imported WIF 5KqWeRtYuJoPaSdFgHjKkZxCvBnMqWeRtYuJoPaSdFgHjKkZxCv into electrum",
        "5KqWeRtYuJoPaSdFgHjKkZxCvBnMqWeRtYuJoPaSdFgHjKkZxCv",
    ),
    (
        # The checksum holds: a key, wherever the text names one.
        "privkey backup: 5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ",
        "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ",
    ),
]
WALLETS_KEPT = [
    # Not after "WIF", and its checksum fails (one character changed): an id.
    "dumpprivkey failed; request 5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTK logged",
    "zeros: [" + ",".join(["0"] * 64) + "]",
]

URLS = [
    ("notify: https://hooks.zapier.com/hooks/catch/6731757/abcd3f9/", "abcd3f9"),
    ("notify: https://mattermost.example.io/hooks/xk3j9qwe8p7zq1mn4bv6cx2lk5", "xk3j9qwe8p7z"),
    (
        "the token is abc_Def1GhIjkLmnO2P3\nqr4stuVwxy5ZAb6CD7e8 (it wrapped when I pasted it)",
        "qr4stuVwxy5ZAb6CD7e8",
    ),
]
# A query value cut at its first percent escape, a table cell wrapped by <br>.
CONTINUED = [
    (
        "https://acct.blob.core.windows.net/c/r.csv?sv=2022-11-02&sp=r&spr=https"
        "&sig=AbcDe1Fgh%2BijKLmN2O3pQrStUvWxyzAbCdEfgh4IJk%2B",
        "ijKLmN2O3pQrStUvWxyzAbCdEfgh4IJk",
    ),
    (
        "https://acct.blob.core.windows.net/c/r.csv?sv=2022-11-02&sp=r&spr=https"
        "&sig=AbCdE1fGhIjK%A2lMnOpQrStUv9WxYzAbCdEfGhIjKlMn%3D",
        "lMnOpQrStUv9WxYzAbCdEfGhIjKlMn",
    ),
    (
        "| name | value |\n|---|---|\n| ANTHROPIC_API_KEY | "
        "sk-ant-api03-aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3aBcD-eFgHi<br>"
        "QWERTYuiop1234ASDFghjk5678ZXCVbnm90QWERTYuiop |",
        "QWERTYuiop1234ASDFghjk5678",
    ),
    (
        "https://b.s3.amazonaws.com/r.csv?X-Amz-Security-Token=IQoJb3JpZ2luX2VjEXAMPLEabcdefghij"
        "klmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHI"
        "JKLMNOPQ%2FRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz%2BABC&X-Amz-Signature=0",
        "RSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz",
    ),
]
URLS_KEPT = [
    "sign the body and pass it as ?signature=hmac_sha256_of_body&ts=now",
    "see https://docs.example.io/hooks/intro for the hook list",
]

KEPT_PUBLIC = [
    "deploy key (public): ssh-rsa "
    "AAAAB3NzaC1yc2EAAAADAQABAAABgQiBCs9msDoJlpIEUuROqd2Sj35M ci@runner",
]


@pytest.mark.parametrize(
    ("text", "secret"),
    [*RECOVERY, *PASSPHRASES, *PROSE, *COMMANDS, *LINES, *WALLETS, *URLS, *CONTINUED],
)
def test_a_secret_form_of_the_seventh_probe_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        *RECOVERY_KEPT,
        *PASSPHRASES_KEPT,
        *PROSE_KEPT,
        *COMMANDS_KEPT,
        *LINES_KEPT,
        *WALLETS_KEPT,
        *URLS_KEPT,
        *KEPT_PUBLIC,
    ],
)
def test_a_near_miss_of_a_seventh_probe_form_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), FIELDS)
def test_a_secret_field_of_a_colon_separated_line_is_masked(text: str, secret: str) -> None:
    assert privacy.needs_scrub(text)
    assert secret not in privacy.scrub(text)
    assert secret not in secret_rules.mask(text, gated=False)


@pytest.mark.parametrize("text", FIELDS_KEPT)
def test_a_colon_separated_line_without_a_secret_stays(text: str) -> None:
    assert privacy.scrub(text) == text


def test_a_credential_scope_after_a_masked_key_id_stays() -> None:
    """The key id is masked; its scope (a date, a region, a service) goes on readable:
    the rest of a query value is masked only when it looks random."""
    scope = "%2F20261207%2Fus-east-1%2Fs3%2Faws4_request"
    out = privacy.scrub(f"?X-Amz-Credential=ASIAMBNZF4WCT53F4FHK{scope}&x=1")
    assert out == f"?X-Amz-Credential=[REDACTED:aws-key]{scope}&x=1"


def test_the_line_after_a_masked_token_goes_on_readable_when_it_starts_with_a_word() -> None:
    """A wrapped token's rest is a random-looking run; a line that starts with a word of
    token characters and goes on is the text going on."""
    out = privacy.scrub("the token is abc_Def1GhIjkLmnO2P3\nrestart_the_service_now then check")
    assert out == "the token is [REDACTED:prose]\nrestart_the_service_now then check"
