"""Secret phrasings a held-out probe (s37) found stored readable, one group per family:
a password or a token named in prose of other languages (after "my", after an owner, a
token, an API key), a password passed by position to a call that takes one, a test
typing into a password field, a user and a bare "p:", a secret set to a new value
named before its verb, OpenSSL's other secret options. Each is checked through the
filter with and without its gates; look-alikes that hold no secret stay. Then the
repeated words whose places the gates read once per run. The values are fake.
"""

from __future__ import annotations

import pytest

from memlane import privacy, secret_gates
from tests.secret_cases import assert_kept, assert_masked

FOREIGN_PROSE = [
    ("мой токен Vq7mPx4Lw9", "Vq7mPx4Lw9"),
    ("мой пароль Hx5nQz8Lp2", "Hx5nQz8Lp2"),
    ("мій токен доступу: Kp3rTs9Wm4", "Kp3rTs9Wm4"),
    ("токен: Rb6yUe2Nc8", "Rb6yUe2Nc8"),
    ("API-ключ — Gw4hJk7Pq1", "Gw4hJk7Pq1"),
    ("пароль от сервера Tz8vBn3Xc5", "Tz8vBn3Xc5"),
    ("我的API密钥: Mq2wEr6Ty9", "Mq2wEr6Ty9"),
    ("我的密码Ls4dFg8Hj1", "Ls4dFg8Hj1"),
    ("私のパスワードはPa5sWo7Rd3", "Pa5sWo7Rd3"),
    ("내 비밀번호 Nb3Vc7Xz2q", "Nb3Vc7Xz2q"),
    ("كلمة السر الخاصة بي Qa9Ws2Ed4r", "Qa9Ws2Ed4r"),
    ("مفتاح API: Rf5Tg8Yh1u", "Rf5Tg8Yh1u"),
    ("मेरा पासवर्ड Ij7Kl2Mn5o है", "Ij7Kl2Mn5o"),
    ("टोकन: Up3Io6Pa9s", "Up3Io6Pa9s"),
    ("api anahtarım Df4Gh7Jk1l", "Df4Gh7Jk1l"),
    ("mi contraseña Zx8Cv3Bn6m", "Zx8Cv3Bn6m"),
    ("moje hasło Qw2Er5Ty8u", "Qw2Er5Ty8u"),
    ("Passwort für den Server Ws3Ed6Rf9t.", "Ws3Ed6Rf9t"),
]

FOREIGN_PROSE_KEPT = [
    "мой токен истёк вчера",
    "мой пароль слишком короткий",
    "Пароль был изменён вчера",
    "пароль от сервера не подходит",
    "пароль от роутера TP-Link",
    "токен доступа истёк",
    "我的密码错误",
    "パスワードを忘れました",
    "मेरा पासवर्ड भूल गया",
    "كلمة السر الخاصة بي خاطئة",
    "api anahtarı nerede?",
]

POSITIONAL = [
    ('create_superuser("admin", "a@b.com", "Cs4pUr7Xq2")', "Cs4pUr7Xq2"),
    ("User.objects.create_user('bob', 'bob@x.io', 'Cu5sEr8Wq3')", "Cu5sEr8Wq3"),
    ('mysql.connector.connect("localhost", "root", "My6sQl9Er4")', "My6sQl9Er4"),
    ('MySQLdb.connect("db", "app", "Md7bCn2Rt5", "shop")', "Md7bCn2Rt5"),
    ('ftplib.FTP("ftp.example.com", "anon", "Ft8pLg3Yu6")', "Ft8pLg3Yu6"),
    ('signInWithEmailAndPassword(auth, "a@b.com", "Fb9sIg4Hn7")', "Fb9sIg4Hn7"),
    ('await signIn("bob", "Sg2nIn5Kl8")', "Sg2nIn5Kl8"),
]

POSITIONAL_KEPT = [
    "login(user, pwd)",
    "signIn(user, password)",
    'create_superuser("admin", "a@b.com", password)',
    "mysql.connector.connect(host, user, pw)",
    'create_user("bob", "bob@example.com")',
    'mysql.connector.connect("localhost", "root", "")',
]

TYPED = [
    ("cy.get('#password').type('Cy4pRs7Wq1')", "Cy4pRs7Wq1"),
    ("page.fill('input[name=\"password\"]', 'Pw5fLl8Zx2')", "Pw5fLl8Zx2"),
    ('driver.find_element(By.ID, "password").send_keys("Se6kYs9Qa3")', "Se6kYs9Qa3"),
    ("cy.get('#password')\n  .clear()\n  .type('Ch7aIn2Wd4', { log: false })", "Ch7aIn2Wd4"),
    ("await page.getByLabel('Password').fill('Gb8lAb3Fl5')", "Gb8lAb3Fl5"),
    ('driver.findElement(By.id("password")).sendKeys("Fe9lMt4Sk6");', "Fe9lMt4Sk6"),
    ("$('#password').setValue('Wd2sVl5Ue7')", "Wd2sVl5Ue7"),
    ("await t.typeText('#password', 'Tc3tTx6Yp8')", "Tc3tTx6Yp8"),
    ("await userEvent.type(screen.getByLabelText(/password/i), 'Ue4vTy7Pe9')", "Ue4vTy7Pe9"),
    ('onView(withId(R.id.password)).perform(typeText("Es5pRs8Sv1"))', "Es5pRs8Sv1"),
    ("fill_in 'Password', with: 'Cp6bRa9Fi2'", "Cp6bRa9Fi2"),
]

TYPED_KEPT = [
    "type('hello')",
    "cy.get('#username').type('bob')",
    "cy.get('#password').type('{enter}')",
    "cy.get('#password').type(Cypress.env('PW'))",
    "cy.get('#password').type(`${pw}`)",
    "page.fill('#email', 'x@y.com')",
    "it('types a password', () => cy.get('#user').type('bob'))",
    "password_field = page.locator('#password')",
]

PAIRS_AND_RESETS = [
    ("u: admin p: Up4aIr7Pz1", "Up4aIr7Pz1"),
    ("user=admin, p=Ue5qPa8Xc2", "Ue5qPa8Xc2"),
    ("user admin / pass Us6sLh9Vb3", "Us6sLh9Vb3"),
    ("the pw was rotated to Rt7pWd2Nm4", "Rt7pWd2Nm4"),
    ("password changed to Pc8hGd3Qw5", "Pc8hGd3Qw5"),
    ("The API key has just been rotated to Ak9rOt4Er6.", "Ak9rOt4Er6"),
]

PAIRS_AND_RESETS_KEPT = [
    "u: admin p: 4",
    "user=admin, p=x",
    "password changed to the new format",
    "the password was reset to default",
    "version changed to 2.4.1b",
    "user bob / password",
]

OPENSSL = [
    ("openssl ca -key Oc2aKy5Ps8 -in r.csr -out c.crt", "Oc2aKy5Ps8"),
    ("openssl ca -keyfile ca.key -key Ok3fIl6Ey9 -in r.csr", "Ok3fIl6Ey9"),
    ("openssl enc -aes-256-cbc -K 00112233445566778899aabbccddeeff -iv 00", "00112233445566778899"),
    ("openssl kdf -kdfopt pass:Kd4fOp7Ts1 -kdfopt salt:abc PBKDF2", "Kd4fOp7Ts1"),
]

OPENSSL_KEPT = [
    "openssl req -new -key server.key -out x.csr",
    'openssl ca -keyfile ca.key -key "$CA_PASS" -in r.csr',
]


@pytest.mark.parametrize(("text", "secret"), FOREIGN_PROSE)
def test_a_secret_in_prose_of_another_language_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", FOREIGN_PROSE_KEPT)
def test_prose_of_another_language_without_a_secret_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), POSITIONAL)
def test_a_password_passed_by_position_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", POSITIONAL_KEPT)
def test_a_variable_or_a_call_that_takes_no_password_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), TYPED)
def test_text_typed_into_a_password_field_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", TYPED_KEPT)
def test_typing_into_another_field_or_typing_keys_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), PAIRS_AND_RESETS)
def test_a_bare_p_after_a_user_and_a_secret_set_anew_are_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", PAIRS_AND_RESETS_KEPT)
def test_a_p_or_a_change_that_names_no_secret_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), OPENSSL)
def test_an_openssl_secret_option_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", OPENSSL_KEPT)
def test_an_openssl_key_file_or_a_pass_source_stays(text: str) -> None:
    assert_kept(text)


# The options the openssl command rules read, given to another program: no secret of
# openssl's, and nothing for the filter to read (the rules' one gate needs the command;
# a "pass:" source is masked wherever it stands, by a rule of its own).
OPENSSL_OPTIONS_ELSEWHERE = [
    "libressl-tool ca -key Oc2aKy5Ps8 -in r.csr -out c.crt",
    "libressl-tool ca -keyfile ca.key -key Ok3fIl6Ey9 -in r.csr",
    "libressl-tool enc -aes-256-cbc -K 00112233445566778899aabbccddeeff -iv 00",
]


@pytest.mark.parametrize("text", OPENSSL_OPTIONS_ELSEWHERE)
def test_an_openssl_option_without_the_openssl_command_stays(text: str) -> None:
    assert_kept(text)
    assert not privacy.needs_scrub(text)


@pytest.mark.parametrize(("text", "secret"), OPENSSL)
def test_the_openssl_gate_needs_the_command(text: str, secret: str) -> None:
    gate = secret_gates.OPENSSL
    assert gate(text, secret_gates.fold(text))
    other = text.replace("openssl", "libressl-tool")
    assert not gate(other, secret_gates.fold(other))


# --------------------------------------------------- a word repeated thousands of times

REPEATS = 20_000


@pytest.mark.parametrize("unit", ["password? ", "pass is x ", "token: "])
def test_the_gates_ask_a_run_of_repeats_once(unit: str) -> None:
    """The places of a run that repeats (the text around each the same) reach the gates
    as a few: the run's ends and the places near the text's ends."""
    low = secret_gates.fold(unit * REPEATS)
    names, places = secret_gates.gate_places(low)
    assert len(secret_gates.key_ends(low)) >= REPEATS
    assert len(names) + len(places) <= 8 * secret_gates.GATE_WINDOW // len(unit)


def test_a_line_of_a_repeated_key_and_words_needs_no_scrub() -> None:
    # "pass" opens the line, but more than one word follows it: no config line's value.
    assert not privacy.needs_scrub("pass is x " * REPEATS)
    assert privacy.needs_scrub("pass Tr0ub4dor&3")
