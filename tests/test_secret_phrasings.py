"""Secret phrasings a blind probe (s36) found stored readable, one group per rule
change: prose with a few words between the secret word and its verb or colon, compound
and foreign words for a password, an API key or a token, user / password pairs, ``pw``,
OpenSSL's ``pass:``. Each is checked through the filter (with and without its gates);
look-alikes of the same shape that hold no secret stay as they are. The values are fake.
"""

from __future__ import annotations

import pytest

from tests.secret_cases import assert_kept, assert_masked

# Words between the secret word and its linking verb or colon: up to six in English,
# seven in the other languages (whose sentences take more articles). Before: the English
# rule read four, and a hyphenated word ("Staging-Server") ended a German sentence.
PROSE_REACH = [
    ("The API key we use for Stripe in prod: Wq83mZpLx2", "Wq83mZpLx2"),
    ("the password we set for the guest network is Vk4pTm2nQz", "Vk4pTm2nQz"),
    ("The root password of the old build box is Jt6wXa9pLm", "Jt6wXa9pLm"),
    ("the token our deploy bot uses for GitHub = Rb5nYc8kWq", "Rb5nYc8kWq"),
    ("Das Passwort für den Staging-Server lautet Hm3kQv7xZp", "Hm3kQv7xZp"),
    ("Das Kennwort des Admin-Kontos auf db-01 ist Pz8rLw2mKc", "Pz8rLw2mKc"),
    ("le mot de passe du serveur de recette : Cx5vNb8mQw", "Cx5vNb8mQw"),
    ("La contraseña del usuario root en el servidor es Dq2wEr5tYu", "Dq2wEr5tYu"),
    ("A senha do banco de dados de produção é Fg7hJk2lMn", "Fg7hJk2lMn"),
    ("el token de acceso personal es Gt4yHu6jKi", "Gt4yHu6jKi"),
]

# A value that can be a word, code or a place: no secret however far the verb is.
PROSE_REACH_KEPT = [
    "The password for the staging server is stored in the vault",
    "the API key we use for Stripe in prod: see the team vault",
    "the password field of the signup form is required",
    "reset your password via the link we sent to you",
    "The password hash for the new users table = bcrypt(password)",
    "the token budget we give to each request is 4096",
    "Das Passwort für den Staging-Server liegt im Tresor",
    "la contraseña de la base de datos es secreta",
    "the password for the db is ********",
    "the API key for the Stripe sandbox is <your-token>",
]

# A password word glued to its kind (German, Dutch, the Nordic languages) and
# "credentials" in other languages. Before: a letter before the word made it part of
# another word, and "Zugangsdaten" named nothing.
COMPOUNDS = [
    ("Datenbankpasswort: Lp9oKi8uJy", "Lp9oKi8uJy"),
    ("das Datenbankpasswort lautet Mn3bVc6xZa", "Mn3bVc6xZa"),
    ("Adminkennwort = Qa2wSx4eDc", "Qa2wSx4eDc"),
    ("het databasewachtwoord is Rf5tGb7yHn", "Rf5tGb7yHn"),
    ("Zugangsdaten: deploy / Uj8iKo9lPm", "Uj8iKo9lPm"),
    ("die Zugangsdaten lauten admin / Yh6uJm3nBv", "Yh6uJm3nBv"),
    ("identifiants : admin / Tg5rFv2cDx", "Tg5rFv2cDx"),
    ("Zugangscode: Kj7hGf4dSa", "Kj7hGf4dSa"),
]

COMPOUNDS_KEPT = [
    "Das Datenbankpasswort ist geändert",
    "Passwortmanager ist KeePass",
    "Die Zugangsdaten sind im Tresor",
    "Zugangsdaten: siehe 1Password",
]

# "API key" and "token" in other languages. Before: only "clave" and the CJK words.
FOREIGN_KEYS = [
    ("clé API : Nb4vCx7zLk", "Nb4vCx7zLk"),
    ("la clé d'API est Mh8gFd3sAq", "Mh8gFd3sAq"),
    ("Clé d’API : Wr2eTy6uIo", "Wr2eTy6uIo"),
    ("Mein API-Schlüssel lautet Pl0kIj9uHy", "Pl0kIj9uHy"),
    ("API Schlüssel = Gb5nHm8jKl", "Gb5nHm8jKl"),
    ("a chave da API é Zx3cVb6nMq", "Zx3cVb6nMq"),
    ("chiave API: Qw9eRt4yUi", "Qw9eRt4yUi"),
    ("le jeton d'accès : As4dFg7hJk", "As4dFg7hJk"),
    ("le jeton est Lz1xCv5bNm", "Lz1xCv5bNm"),
    ("das Zugangstoken lautet Po8iUy3tRe", "Po8iUy3tRe"),
    ("de API-sleutel is Ws6eDr9fTg", "Ws6eDr9fTg"),
    ("klucz API: Hy7uJi2kOl", "Hy7uJi2kOl"),
]

FOREIGN_KEYS_KEPT = [
    "la clé API est dans le fichier .env",
    "le jeton est expiré",
    "der API-Schlüssel ist abgelaufen",
    "clé API: <votre-clé>",
    "API-Schlüssel: ${STRIPE_KEY}",
    "jeton: $JETON",
    "les jetons de présence",
]

# A user and a password split by "/", glued or spaced, after a login or credentials word
# and its ":", verb, "=" or "with" (or no link: "login admin / X"). Before: a glued pair,
# "=", "with" and the bare form were not read, nor "username/password: u / X".
PAIRS = [
    ("login: admin/Sup3rS3cret!", "Sup3rS3cret!"),
    ("creds: root/Xy7!kLm9Qp", "Xy7!kLm9Qp"),
    ("Login for the NAS: admin/Bq4tYw9Kx2", "Bq4tYw9Kx2"),
    ("log in with alice/Nm4bVc8xZq", "Nm4bVc8xZq"),
    ("login admin / Ty6uIo9pAs", "Ty6uIo9pAs"),
    ("creds = ops / Df3gHj6kLz", "Df3gHj6kLz"),
    ("username/password: admin / Er5tYu8iOp", "Er5tYu8iOp"),
    ("password: admin / Cv2bNm5qWe", "Cv2bNm5qWe"),
]

# Paths, fractions, dates, login methods: "/" between words that are no password.
PAIRS_KEPT = [
    "see admin/users and src/main for the login code",
    "login: see src/main.py",
    "login: admin/users page",
    "creds are in vault/prod",
    "the ratio is 3/4 and the date 12/05/2024",
    "login with SSO/okta",
    "log in with Google/GitHub",
    "the login form / signup form",
    "user/pass: see the wiki",
    "login: alice / see slack",
]

# "pw" then its value, with a blank, ":" or "="; "pwd=". Before: "pw X" only where a
# line started with it or after "user NAME".
PW = [
    ("ssh root@db01 pw Kq7wEr2tYx", "Kq7wEr2tYx"),
    ("connect as admin pw Zm4nXb8vCq", "Zm4nXb8vCq"),
    ("the pw Lp5oKi9uJh works", "Lp5oKi9uJh"),
    ("pw: Gt6yHu3jKi", "Gt6yHu3jKi"),
    ("pw=Rf8tGb2yHn", "Rf8tGb2yHn"),
    ("pwd=Ws3eDr7fTg", "Ws3eDr7fTg"),
]

PW_KEPT = [
    "$ pwd\n/home/alice/project",
    "pwd && ls -la",
    "run pwd /tmp",
    "the pwned passwords list",
    "the pw field stays empty",
    "pw reset via email",
    "pw: ********",
    "scheme://user:pw@host and redis://:pw@host",
    r"net use X: \\host\share PW /user:DOM\u",
]

# OpenSSL's pass phrase arguments: pass:X holds the password whatever it looks like.
# Before: a value of letters only ("changeit") was left.
OPENSSL = [
    ("openssl pkcs12 -export -in c.pem -passout pass:changeit -out a.p12", "changeit"),
    ("openssl ca -batch -passin pass:capassword", "capassword"),
    ("openssl rsa -in enc.key -passin 'pass:Bq4tYw9Kx2' -out dec.key", "Bq4tYw9Kx2"),
    ('openssl pkcs8 -topk8 -passout "pass:Vn5mKl8pQw"', "Vn5mKl8pQw"),
    ("openssl enc -aes-256-cbc -pass pass:hunter22 -in a -out b", "hunter22"),
    ("openssl req -new -key k.pem -password pass:letmein", "letmein"),
]

OPENSSL_KEPT = [
    "openssl pkcs12 -export -passout env:P12_PASS -out a.p12",
    "openssl rsa -passin file:/run/secrets/pw.txt -in k.pem",
    "openssl enc -aes256 -pass stdin -in f",
    "openssl x509 -password fd:3",
    "openssl rsa -passin pass:$KEY_PASS -in k.pem",
]

# A user option then a password option, another user option between (the rule reads
# no further than the next user option: a match from there finds the same password).
USER_OPTIONS = [
    ("az sql server create -u admin -u dba -p Hj8kLz2xQw", "Hj8kLz2xQw"),
    ("tool -u first --username=second --password Mq3wEr6tYu", "Mq3wEr6tYu"),
]


@pytest.mark.parametrize(("text", "secret"), PROSE_REACH)
def test_a_secret_a_few_words_after_its_word_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", PROSE_REACH_KEPT)
def test_prose_about_a_secret_without_one_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), COMPOUNDS)
def test_a_compound_password_word_names_its_value(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", COMPOUNDS_KEPT)
def test_a_compound_password_word_without_a_value_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), FOREIGN_KEYS)
def test_an_api_key_or_token_named_in_another_language_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", FOREIGN_KEYS_KEPT)
def test_a_foreign_key_word_without_a_secret_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), PAIRS)
def test_the_password_of_a_user_password_pair_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", PAIRS_KEPT)
def test_a_slash_between_words_that_hold_no_password_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), PW)
def test_the_value_after_pw_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", PW_KEPT)
def test_pwd_the_command_and_pw_in_other_words_stay(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), OPENSSL)
def test_an_openssl_pass_phrase_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", OPENSSL_KEPT)
def test_an_openssl_pass_phrase_source_stays(text: str) -> None:
    assert_kept(text)


@pytest.mark.parametrize(("text", "secret"), USER_OPTIONS)
def test_a_password_option_after_several_user_options_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


def test_the_phrasings_are_masked_in_a_long_text_too() -> None:
    # 256+ characters: the gates find the words by their automaton, not by loops.
    filler = "the build ran and every check passed on the first try today. " * 6
    for text, secret in PROSE_REACH + COMPOUNDS + FOREIGN_KEYS + PAIRS + PW + OPENSSL:
        assert_masked(filler + text + "\n" + filler, secret)


# A secret after a long run of what made the filter slow (a word repeated, each of its
# places read again; a user option repeated): the gates' shortcuts (a stretch known to
# hold no digit, the words split only when a form needs them, the answers remembered
# for the text) still let it through to its rule.
RUNS_THEN_A_SECRET = [
    ("password? " * 3000 + "password? maple@5835@Falcon&", "maple@5835@Falcon&"),
    ("pass is x " * 3000 + "the pass is Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("-u x " * 3000 + "-u admin -p Hj8kLz2xQw", "Hj8kLz2xQw"),
    ('password "x ' * 3000 + '\nprivate_key "Pk7mQw2zXc";', "Pk7mQw2zXc"),
    ("login a " * 3000 + "login: admin/Sup3rS3cret!", "Sup3rS3cret!"),
]


@pytest.mark.parametrize(("text", "secret"), RUNS_THEN_A_SECRET)
def test_a_secret_after_a_long_run_of_its_word_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)
