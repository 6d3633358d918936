"""Secret phrasings a review (s38) found stored readable, one group per family: a
Kubernetes or compose env pair whose value is a plain word or sits under a comment or in
a block scalar, a .NET ``<setting>``'s ``<value>`` and an ``<add key="A:B">`` value, a
PIN written in dashed groups after its owner, a password of letters alone named in a
sentence, a Hindi sentence that goes on after its verb. Each is checked through the
filter with and without its gates; look-alikes that hold no secret stay. The values are
fake.
"""

from __future__ import annotations

import pytest

from memlane.privacy import scrub
from tests.secret_cases import assert_kept, assert_masked, family_cases

ENV_PAIRS = [
    ("env:\n  - name: MYSQL_ROOT_PASSWORD\n    value: hunterhunter", "hunterhunter"),
    ("env:\n- name: password\n  value: opensesame", "opensesame"),
    ("- name: DB_PASSWORD\n  # from vault\n  value: Vq7mPx4Lw9", "Vq7mPx4Lw9"),
    ("- name: API_KEY\n  value: >-\n    Kp3rTs9Wm4Zq", "Kp3rTs9Wm4Zq"),
    ("- name: SMTP_PASSWORD\n  value: 'correct horse'", "correct horse"),
]

ENV_PAIRS_KEPT = [
    "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db",
    "- name: DB_PASSWORD\n  value: $(OTHER_PASSWORD)",
    '- name: DB_PASSWORD\n  value: "{{ .Values.db.password }}"',
    "- name: DB_PASSWORD_FILE\n  value: /run/secrets/db",
    "- name: PASSWORD_MIN_LENGTH\n  value: 12",
    "- name: DB_PASSWORD\n  value: ${DB_PASSWORD}",
    "- name: DB_PASSWORD\n  value: true",
    "- name: DB_PASSWORD\n  value: !Ref DbPasswordParam",
    "- name: DB_PASSWORD\n  value: *db_password",
]

DOTNET = [
    (
        '<setting name="ApiSecret" serializeAs="String"><value>Xk9mPq2Lw7</value></setting>',
        "Xk9mPq2Lw7",
    ),
    (
        '<setting name="DbPassword" serializeAs="String">\n  <value>hunterhunter</value>\n'
        "</setting>",
        "hunterhunter",
    ),
    ('<add key="Stripe:SecretKey" value="Sk4eYs7Tq2"/>', "Sk4eYs7Tq2"),
    ('<add key="Smtp:Password" value="opensesame" />', "opensesame"),
]

DOTNET_KEPT = [
    '<setting name="ApiUrl" serializeAs="String"><value>https://api.acme.io</value></setting>',
    '<setting name="PasswordMinLength" serializeAs="String"><value>12</value></setting>',
    '<setting name="DbPassword" serializeAs="String"><value /></setting>',
    '<add key="Stripe:PublishableKey" value="pk_test_51Hx"/>',
    '<add key="Smtp:Host" value="smtp.acme.io"/>',
]

PINS = [
    ("the PIN for the HSM slot 0 is 4711-0815", "4711-0815"),
    ("the PIN of the SIM is 4711-0815-2231", "4711-0815-2231"),
    ("PIN for the safe: 1234-5678", "1234-5678"),
    # An owner after any preposition a password's owner takes, with a number in it.
    ("el PIN para la tarjeta 2 es 4729", "4729"),
    ("PIN för kortet 2 är 4729", "4729"),
    ("le code PIN pour la carte 2 est 4729", "4729"),
    # An arrow links as a dash does.
    ("new PIN -> 4729", "4729"),
    ("PIN nuevo → 4729", "4729"),
]

PINS_KEPT = [
    "the PIN for the HSM slot 0 is 4",
    "the PIN for the HSM is 2024-01-15 old",
    "the PIN of issue 4711-0815 was reset",
    "pin for python 3.11-3.12 support",
    "the pin per board is 4096 wide",
    "gpio pin 4 -> 3300",
]

LETTER_PASSWORDS = [
    ("the wifi password is correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("our wifi password is correcthorsebatterystaple.", "correcthorsebatterystaple"),
    (
        "the password for the guest wifi is correcthorsebatterystaple",
        "correcthorsebatterystaple",
    ),
    ("la password dell'ufficio è correcthorsebatterystaple", "correcthorsebatterystaple"),
]

LETTER_PASSWORDS_KEPT = [
    "the password is required",
    "the password is incorrect, try again",
    "the password is case-sensitive",
    "the token is internationalization of the app",
    "the password is uncharacteristically long for a default",
    "the passphrase is longer than the password",
]

ELIDED = [
    ("La password dell’ufficio è: Vq7mPx4Lw9", "Vq7mPx4Lw9"),
    ("la password dell'ufficio è: Hx5nQz8Lp2!", "Hx5nQz8Lp2!"),
    ("el password del servidor es: Kp3rTs9Wm4", "Kp3rTs9Wm4"),
]

ELIDED_KEPT = [
    "la password dell'ufficio è: cambiata",
    "la password dell’ufficio è: scaduta da ieri",
]

HINDI = [
    ("पासवर्ड Xk9mPq2Lw7 है, इसे किसी को मत बताना", "Xk9mPq2Lw7"),
    ("सर्वर का पासवर्ड Rb6yUe2Nc8 है और यूज़र admin है", "Rb6yUe2Nc8"),
    ("पासवर्ड Tz8vBn3Xc5 है।", "Tz8vBn3Xc5"),
]

HINDI_KEPT = [
    "पासवर्ड सही है, आगे बढ़ें",
    "पासवर्ड गलत है।",
]


MASKED = {
    "kubernetes_env_pair_value": ENV_PAIRS,
    "dotnet_setting_value": DOTNET,
    "pin_after_its_owner": PINS,
    "password_of_letters_named_in_a_sentence": LETTER_PASSWORDS,
    "hindi_password_before_its_verb_and_a_clause": HINDI,
    "password_after_a_foreign_verb_and_a_colon": ELIDED,
}

KEPT = {
    "env_pair_from_a_reference_or_not_secret": ENV_PAIRS_KEPT,
    "dotnet_setting_of_no_secret": DOTNET_KEPT,
    "pin_word_before_a_date_a_version_or_a_short_number": PINS_KEPT,
    "sentence_about_a_password": LETTER_PASSWORDS_KEPT,
    "hindi_sentence_about_a_password": HINDI_KEPT,
    "word_after_a_foreign_verb_and_a_colon": ELIDED_KEPT,
}


@pytest.mark.parametrize(("text", "secret"), family_cases(MASKED))
def test_a_secret_of_each_family_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", family_cases(KEPT))
def test_a_look_alike_of_each_family_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '<add key="ApiSecret" value="Xk9mPq2Lw7Zt"/>',
            '<add key="ApiSecret" value="[REDACTED:assignment]"/>',
        ),
        (
            "<add key='DbPassword' value='hunterhunter'/>",
            "<add key='DbPassword' value='[REDACTED:assignment]'/>",
        ),
    ],
)
def test_a_self_closing_tag_keeps_its_quotes_and_its_end(text: str, expected: str) -> None:
    assert scrub(text) == expected
