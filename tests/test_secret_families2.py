"""Secret families a sixth blind probe (s38) found stored readable, one group per family,
each with look-alikes that hold no secret: a PIN named in another language or with its
owner and no English preposition, a SIM's PUK, a code "I got by SMS", backup codes after
their account, an INI file's password of letters, a triple-quoted value, redis-server's
``--requirepass``, a password shaped like an attribute (``Word.word2024``), and a public
key's fingerprint after gpg's "using RSA key" (kept). Each is checked through the filter
with and without its gates. The values are fake and written for these tests.
"""

from __future__ import annotations

import pytest

from tests.secret_cases import assert_kept, assert_masked, family_cases

PIN_WORDS = [
    ("暗証番号は8302です", "8302"),
    ("カードの暗証番号: 61940275", "61940275"),
    ("Die PIN für den Safe ist 7716.", "7716"),
    ("Der PIN-Code vom Handy lautet 29384", "29384"),
    ("le code PIN du téléphone est 8842", "8842"),
    ("Tu PIN nuevo es 3391, guárdalo", "3391"),
    ("il PIN della carta è 50127", "50127"),
    ("de pincode voor de alarmcentrale is 6614", "6614"),
    ("ПИН-код для домофона 7203", "7203"),
    ("and the PUK is 73920184 in case the SIM locks", "73920184"),
    ("the verification code they sent me by email was 448201", "448201"),
    ("Backup codes for the team GitHub account: 5521 0093, 6610 2271", "2271"),
]

PIN_WORDS_KEPT = [
    "暗証番号は4桁です",
    "暗証番号を忘れた",
    "Der PIN-Code ist falsch, 3 Versuche übrig",
    "la PIN della carta è scaduta",
    "pin 17 is 3300 ohms on this board",
    "the pin count is 2048",
    "the PIN field was 2024 pixels wide",
    "error code for the build was 1045",
    "backup codes for the account are printed below",
]

CONFIG_VALUES = [
    (
        "[mail]\nenabled = true\nhost = smtp.acme.io:587\npassword = qzmvbtrlkwpsuydh\n"
        "from = alerts@acme.io",
        "qzmvbtrlkwpsuydh",
    ),
    ("; settings\n[db]\n# the app user\npassword = blueberry\n", "blueberry"),
    ('[database]\nuser = app\npassword = """Lisbon#2207"""', "Lisbon#2207"),
    ("db_password = '''Otter!Kite88'''", "Otter!Kite88"),
    ("redis-server --save 60 1 --requirepass Mv3#qpL8zt", "Mv3#qpL8zt"),
    ("    Environment:\n      API_TOKEN:    Walrus.meadow7319\n", "Walrus.meadow7319"),
    ("DB_PASSWORD: Harbor.lantern2044", "Harbor.lantern2044"),
]

CONFIG_VALUES_KEPT = [
    "def connect():\n    password = getpass\n    return password",
    "[db]\npassword = true",
    "[db]\npassword = ${DB_PASSWORD}",
    'password = """"""',
    'token: str = """{{ vault_token }}"""',
    'redis-server --requirepass "$REDIS_PASSWORD"',
    "password: config.password",
    "DB_PASSWORD: process.env.DB_PASSWORD",
    "token: hashlib.sha256",
]

FINGERPRINTS_KEPT = [
    "gpg: using RSA key 3F1A9C0B7E2D4A6F8B1C3D5E7F9A0B2C4D6E8F10",
    "gpg: using EDDSA key 4A6F73F34BEB7473",
    "gpg: Signature made Tue 01 Oct\ngpg:                using RSA key 8E2D1C4B6A9F0E3D",
]

FINGERPRINT_LOOKALIKES = [
    (
        "api key 3F1A9C0B7E2D4A6F8B1C3D5E7F9A0B2C4D6E8F10",
        "3F1A9C0B7E2D4A6F8B1C3D5E7F9A0B2C4D6E8F10",
    ),
    ("RSA key 7fJkq2Lm9XwPz8Rt4Vb6Nc3Hd5Gs1Qa0", "7fJkq2Lm9XwPz8Rt4Vb6Nc3Hd5Gs1Qa0"),
]


PROSE = [
    ("could you try logging in as deploy with Qv7!mTz2 again", "Qv7!mTz2"),
    ("I signed in as admin with Rk4#pLw9 this morning", "Rk4#pLw9"),
    ("login for the billing dashboard: finance@acme.io / Pw3$Ledger77", "Pw3$Ledger77"),
    ("use 'marble-otter-canyon' as the passphrase for the key", "marble-otter-canyon"),
    ('use "blue-harvest-lamp" as the db password', "blue-harvest-lamp"),
    ("the passphrase for the backup disk is: amber falcon river stone", "river stone"),
]

PROSE_KEPT = [
    "logging in as admin with sso works again",
    "logged in as deploy with id_ed25519",
    "use argon2id as the passphrase hash",
    "use `make-release` as the password",
    "the password policy is: at least 8 characters",
    "the passphrase is: something you choose yourself",
    "login for the billing dashboard: ask finance",
]

SHAPES = [
    (
        '<property name="hibernate.connection.password">Rotterdam#4411</property>',
        "Rotterdam#4411",
    ),
    ('<string name="api_token">Zt8kWq3Lm5Xp</string>', "Zt8kWq3Lm5Xp"),
    ('<entry key="mail.smtp.password">lettuceboat</entry>', "lettuceboat"),
    (
        '{\n  "spring.datasource.password": {\n    "value": "Granite&Heron412",\n'
        '    "origin": "application.yml"\n  }\n}',
        "Granite&Heron412",
    ),
    ("jdbc:postgresql://db:5432/app?user=app&password=#Quill7730&ssl=true", "#Quill7730"),
    (
        "[Service]\nEnvironment=BORG_PASSPHRASE=velvet otter lantern ridge\nExecStart=/bin/borg",
        "otter lantern ridge",
    ),
    ("account work\nhost smtp.gmail.com\npassword qhmd zkvr plot wexn\n", "plot wexn"),
    ('"billing" "md5a3c9e1f07b2d4c6e8f0a1b3c5d7e9f02"', "md5a3c9e1f07b2d4c6e8f0a1b3c5d7e9f02"),
    ("<auth-user-pass>\nopsuser\nT4n!gerLily\n</auth-user-pass>", "T4n!gerLily"),
]

SHAPES_KEPT = [
    '<property name="hibernate.connection.password">${DB_PASSWORD}</property>',
    '<property name="password.min.length">12</property>',
    '<string name="password_hint">Enter your password</string>',
    '{"spring.datasource.password": {"value": "******"}}',
    '{"password_policy": {"value": "strict"}}',
    "https://x.io/cb?token=#",
    "Environment=DB_PASSWORD_FILE=/run/secrets/db",
    "password that will work fine",
    "password fwgk bgee feet ubkm extra",
    "md5d41d8cd98f00b204e9800998ecf8427e0",  # 33 hex digits: no MD5 hash
    "md5d41d8cd98f00b204e9800998ecf8427e$",  # followed by '$': part of another hash
    "auth-user-pass /etc/openvpn/creds.txt",
    "<auth-user-pass>\n</auth-user-pass>",
]


MORE_SHAPES = [
    ("ledger: app_rw/Cobalt-Meadow-52@//db-prod.acme.local:1521/ORCLPDB", "Cobalt-Meadow-52"),
    (
        "#0 /srv/app/db.php(9): PDO->__construct('mysql:host=db', 'shop', 'tulip-argon-3318')",
        "tulip-argon-3318",
    ),
    ("$ cat /etc/rsyncd.secrets\nmirror:Qp7#vL2!xZ", "Qp7#vL2!xZ"),
    (
        "token=sntrys_eyJpYXQiOjE3MDAwMDAwMDB9AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_aB3-xYz9Qw",
        "xYz9Qw",
    ),
    (
        "echo -n 'deploy:Juniper!Kite7' | base64\nZGVwbG95Okp1bmlwZXIhS2l0ZTc=",
        "ZGVwbG95Okp1bmlwZXIhS2l0ZTc=",
    ),
]

MORE_SHAPES_KEPT = [
    "see https://example.com/a/b@//c",
    "ledger: app_rw/$ORACLE_PASSWORD@//db:1521/ORCL",
    "#0 db.php(9): PDO->__construct('mysql:host=db', 'shop', '')",
    "$ cat /etc/rsyncd.conf\n[mirror]",
    "echo -n 'hello' | base64\naGVsbG8=",
]


MASKED = {
    "pin_or_code_named_in_any_language_or_with_its_owner": PIN_WORDS,
    "config_value_of_letters_quoted_thrice_or_dotted": CONFIG_VALUES,
    "hex_after_another_key_word_or_a_random_value_after_rsa_key": FINGERPRINT_LOOKALIKES,
    "login_or_passphrase_named_in_a_sentence": PROSE,
    "config_or_log_shape_holding_a_password": SHAPES,
    "connect_string_a_trace_a_secrets_file_or_an_encoded_pair": MORE_SHAPES,
}

KEPT = {
    "pin_word_before_no_code_or_a_measure": PIN_WORDS_KEPT,
    "code_a_reference_or_an_empty_value": CONFIG_VALUES_KEPT,
    "public_key_fingerprint_after_its_algorithm": FINGERPRINTS_KEPT,
    "sentence_about_logging_in_or_a_passphrase": PROSE_KEPT,
    "config_or_log_shape_without_a_password": SHAPES_KEPT,
    "reference_an_empty_password_or_a_plain_file": MORE_SHAPES_KEPT,
}


@pytest.mark.parametrize(("text", "secret"), family_cases(MASKED))
def test_a_secret_of_each_family_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", family_cases(KEPT))
def test_a_look_alike_of_each_family_stays(text: str) -> None:
    assert_kept(text)
