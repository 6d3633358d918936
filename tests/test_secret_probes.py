"""Holes an attacker's pass found, each closed by one rule: a password fed on stdin
(``echo 'pw' | docker login --password-stdin``), ``.pgpass`` lines, ``openssl -k``,
fish's ``set -x NAME value``, password hashes (``/etc/shadow``, htpasswd), and a
secret in the folder of a session's transcript. Each is checked through the filter
and through real hook processes against the stored rows and the FTS index; text of
the same shape that holds no secret stays as it is.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memlane.privacy import mask_env_file, shows_env_file
from tests.conftest import MEMLANE_CMD, run_env
from tests.secret_cases import assert_kept, assert_masked
from tests.test_privacy_entrypoints import leaked

# (text, the secret it holds)
MASKED = [
    ("echo 'S3cr3t-literal' | docker login --password-stdin", "S3cr3t-literal"),
    ('echo "Dq7-secretpw" | docker login -u me --password-stdin reg.example.com', "Dq7-secretpw"),
    ("echo Bare7secretpw | docker login -u me --password-stdin", "Bare7secretpw"),
    ("printf '%s' 'Prn7-secretx' | docker login --username me --password-stdin", "Prn7-secretx"),
    ("echo -n 'Pod7-secretx' | podman login -u me --password-stdin quay.io", "Pod7-secretx"),
    ("echo 'Helm7-secretx' | helm registry login -u me --password-stdin ghcr.io", "Helm7-secretx"),
    ("echo 'GhTok7-secretx' | gh auth login --with-token", "GhTok7-secretx"),
    ("docker login -u me --password-stdin <<< 'Here7-secretx'", "Here7-secretx"),
    ("echo 'Sudo7-secretx' | sudo -S apt-get update", "Sudo7-secretx"),
    ("echo 'Passwd7-secretx' | passwd --stdin alice", "Passwd7-secretx"),
    ("echo 'alice:Chpw7-secretx' | sudo chpasswd", "Chpw7-secretx"),
    ("docker login -u me --password-stdin <<EOF\nHeredoc7-secretx\nEOF", "Heredoc7-secretx"),
    ("echo 'Ghsec7-secretx' | gh secret set API_TOKEN", "Ghsec7-secretx"),
    ("gh secret set API_TOKEN --body 'Ghbody7-secretx'", "Ghbody7-secretx"),
    ("echo 'Wrangler7-secretx' | npx wrangler secret put API_TOKEN", "Wrangler7-secretx"),
    ("PGPASSWORD=Pgenv7secretx psql -h db -U alice app", "Pgenv7secretx"),
    ('echo "db.example.com:5432:app:alice:Pgw7secretx" >> ~/.pgpass', "Pgw7secretx"),
    ("printf '%s\n' 'localhost:*:*:postgres:Pgp7secretx' > .pgpass", "Pgp7secretx"),
    ("cat >> ~/.pgpass <<EOF\n*:*:*:bob:Pgh7secretx\nEOF", "Pgh7secretx"),
    ("my pgpass line is db:5432:app:bob:Pgq7secretx", "Pgq7secretx"),
    ("aws configure set aws_secret_access_key Awscfg7secretx", "Awscfg7secretx"),
    ("rclone config create r s3 provider AWS secret_access_key Rcl7secretx", "Rcl7secretx"),
    ("lftp -u alice,Lftp7secretx ftp.example.com", "Lftp7secretx"),
    ("echo 'Sshp7secretx' | sshpass ssh alice@host", "Sshp7secretx"),
    ("xfreerdp /u:alice /p:Rdp7secretx /v:host", "Rdp7secretx"),
    ("rdesktop -u alice -p Rdk7secretx host", "Rdk7secretx"),
    ("nmcli dev wifi connect home password Wifi7secretx", "Wifi7secretx"),
    # A pre-shared key: wpa_supplicant.conf, nmcli's setting names, an env line.
    ('network={\n  ssid="home"\n  psk="Psk7secretx"\n}', "Psk7secretx"),
    ("nmcli con modify home wifi-sec.psk Psk8secretx", "Psk8secretx"),
    ("nmcli connection modify home 802-11-wireless-security.psk Psk9secretx", "Psk9secretx"),
    ("WIFI_PSK=Psk6secretx", "Psk6secretx"),
    # Config files of "name value" lines: redis.conf (any literal), /etc/network/interfaces.
    # strongSwan's ipsec.secrets: quoted or 0s/0x-encoded values.
    ('%any 10.0.0.2 : PSK "Ipsec7secretx"', "Ipsec7secretx"),
    (": PSK 0sv+NkxY9LLZvwj4qCC2o/gGrWDF2d21jL", "0sv+NkxY9LLZvwj4qCC2o/gGrWDF2d21jL"),
    ('carol@strongswan.org : EAP "Eap7secretx"\n', "Eap7secretx"),
    ("@moon : XAUTH 0x70617373776f7264", "0x70617373776f7264"),
    ("bind 127.0.0.1\nrequirepass foobaredsecret\n", "foobaredsecret"),
    ('masterauth "Rds7 secretx"', "Rds7 secretx"),
    ("redis-cli CONFIG SET requirepass Rds8secretx", "Rds8secretx"),
    ("iface wlan0 inet dhcp\n    wpa-ssid home\n    wpa-psk Psk4secretx\n", "Psk4secretx"),
    ("password Cfg7secretx", "Cfg7secretx"),
    ("ssh_password Cfg8secretx  # prod", "Cfg8secretx"),
    ("wpa_passphrase homenet Wpa7secretx", "Wpa7secretx"),
    ("echo 'Dsec7secretx' | docker secret create db_pw -", "Dsec7secretx"),
    ("consul kv put secret/db/password Csl7secretx", "Csl7secretx"),
    ("vault login Vlt7tokenxxxxx", "Vlt7tokenxxxxx"),
    ("docker login -u alice -p=Dkp7secretx", "Dkp7secretx"),
    ("sqlplus scott/Ora7secretx@orcl", "Ora7secretx"),
    ("machine api.heroku.com\n  login me@example.com\n  password Netrc7secretx\n", "Netrc7secretx"),
    ("openssl enc -aes-256-cbc -in a.txt -out a.enc -k Ossl7secretx", "Ossl7secretx"),
    ("openssl enc -d -aes-256-cbc -in a.enc -pass pass:Osslpass7x", "Osslpass7x"),
    ("openssl rsa -in k.pem -passin pass:Osslin7secret -out k2.pem", "Osslin7secret"),
    ("openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:Osslout7secret", "Osslout7secret"),
    ("ssh-keygen -t ed25519 -N 'Kgnew7-secret' -f id", "Kgnew7-secret"),
    ("ssh-keygen -p -P Kgold7secret -N Kgnew7secret -f id", "Kgold7secret"),
    ("ssh-keygen -p -P Kgold7secret -N Kgnew7secret -f id", "Kgnew7secret"),
    ("unrar x -pRar7secretx backup.rar", "Rar7secretx"),
    ("set -x API_TOKEN Fish7tokenx", "Fish7tokenx"),
    ("set -gx DB_PASSWORD Fish7passwd", "Fish7passwd"),
    ("set -Ux GITHUB_TOKEN 'Fish7-quoted'", "Fish7-quoted"),
    ("set -l db_password Fish7local", "Fish7local"),
    ("setenv API_KEY Csh7secretkey", "Csh7secretkey"),
    ("git config --global user.password Gitcfg7secret", "Gitcfg7secret"),
    ("npm config set //registry.npmjs.org/:_authToken Npmcfg7token", "Npmcfg7token"),
    ("yarn config set npmAuthToken Yarncfg7token", "Yarncfg7token"),
    (
        "root:$6$Zq9salt$Zq9sha512hashhashhashhashhashhashhashhashhashhashhashhashh"
        ":19000:0:99999:7:::",
        "Zq9sha512hashhash",
    ),
    ("alice:$5$rounds=5000$salty$Zq9sha256hashValue12345678:19000::", "Zq9sha256hashValue"),
    ("admin:$2y$05$abcdefghijklmnopqrstuuZq9bcrypthashValue12345678901", "Zq9bcrypthashValue"),
    ("$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$Zq9argonHashValue0123456789", "Zq9argonHashValue"),
    ("bob:$y$j9T$F5Jx5fExrKuPp53xLKQ..1$Zq9yescryptHashValue0123456789:19000::", "Zq9yescrypt"),
    ("carol:$1$saltsalt$Zq9md5cryptHash0123", "Zq9md5cryptHash"),
    ("pbkdf2_sha256$260000$saltsaltsalt$Zq9djangoHashValue0123456789AB=", "Zq9djangoHash"),
    ("admin:{SHA}Zq9shaHashValue0123456789=", "Zq9shaHashValue"),
    # One-time codes, PINs and card security codes after their word (secret_words).
    ("Your verification code is 493817.", "493817"),
    ("2FA code: 760253", "760253"),
    ("OTP code: 902104 expires in 5 minutes", "902104"),
    ("the otp is 48213907", "48213907"),
    ("one-time code 493 817", "493 817"),
    ("TOTP: 551203", "551203"),
    ("backup codes: 884122, 773100", "773100"),
    # Card numbers: the network's first digits, the length, Luhn.
    ("Card: 4111 1111 1111 1111 exp 12/27", "4111 1111 1111 1111"),
    ("paid with 4012888888881881 yesterday", "4012888888881881"),
    ("mc 5555-5555-5555-4444", "5555-5555-5555-4444"),
    ("amex 3782 822463 10005", "3782 822463 10005"),
    ("charged to 6011111111111117 today", "6011111111111117"),
    ("JCB 3530111333300000", "3530111333300000"),
    ("diners 30569309025904", "30569309025904"),
    ("mastercard 2223003122003222", "2223003122003222"),
    ('{"card": "4242424242424242"}', "4242424242424242"),
    # Seed phrases (BIP-39 mnemonics) after their name.
    (
        "seed phrase: legal winner thank year wave sausage worth useful legal winner thank yellow",
        "legal winner thank year",
    ),
    (
        "Recovery phrase:\nabandon ability able about above absent absorb abstract absurd abuse"
        " access accident",
        "absorb abstract",
    ),
    ('MNEMONIC="zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo wrong"', "zoo zoo zoo"),
    (
        "my wallet words are: letter advice cage absurd amount doctor acoustic avoid letter"
        " advice cage above",
        "doctor acoustic",
    ),
    # A plain word in quotes after "the password is": the password.
    ('the wifi password is "sunshine"', "sunshine"),
    ("my password was 'letmein'", "letmein"),
    # "password" in other languages, before ":"/"=" or a linking word.
    ("Passwort: Pwde7secretx", "Pwde7secretx"),
    ("das Passwort ist Pwde8secretx", "Pwde8secretx"),
    ("mot de passe : Mdpfr7secretx", "Mdpfr7secretx"),
    ("le mot de passe est « Mdpfr8secretx »", "Mdpfr8secretx"),
    ("contraseña: Pwes7secretx", "Pwes7secretx"),
    ("senha = 'Pwpt7 secretx'", "Pwpt7 secretx"),
    ("wachtwoord: Pwnl7secretx", "Pwnl7secretx"),
    ("hasło: Pwpl7secretx", "Pwpl7secretx"),
    ("пароль: Pwru7secretx", "Pwru7secretx"),
    ("パスワード: Pwja7secretx", "Pwja7secretx"),
    ("パスワードはPwja8secretxです", "Pwja8secretx"),
    ("密码是 Pwzh7secretx", "Pwzh7secretx"),
    ("비밀번호: Pwko7secretx", "Pwko7secretx"),
    ("Kennwort=geheimnisvoll", "geheimnisvoll"),
    # A Google OAuth access token (gcloud auth print-access-token).
    ("token from gcloud: ya29.a0AfB_byC1x2y3z4w5v6u7t8s9r0q", "a0AfB_byC1x2y3z4w5"),
]

_SHADOW = next(text for text, _ in MASKED if text.startswith("root:"))

# PINs and card security codes of 3 or 4 digits: checked through the filter only (any
# 4 digits turn up in a database file's hashes by chance, so its bytes cannot tell).
MASKED_SHORT = [
    ("my PIN number is 4821", "4821"),
    ("pin 7392", "7392"),
    ("passcode: 8612", "8612"),
    ("card cvv 7391, expires 12/27", "7391"),
    ("CVC2: 4820", "4820"),
    ("security code 1234 on the back", "1234"),
    ("backup codes: 8841 2290, 7731 0045", "7731 0045"),
]

# Same shapes, nothing secret.
UNCHANGED = [
    'echo "$REGISTRY_PASSWORD" | docker login -u me --password-stdin',
    "aws ecr get-login-password | docker login --password-stdin 1234.dkr.ecr.aws",
    "cat ~/pw.txt | docker login --password-stdin",
    "echo hello | cat",
    "echo $GH_TOKEN | gh auth login --with-token",
    "openssl s_client -connect example.com:443",
    "openssl enc -aes-256-cbc -kfile key.txt -in a.txt",
    "ssh-keygen -t ed25519 -N '' -f id",
    "set -x PATH /usr/local/bin $PATH",
    "set -x API_TOKEN $OTHER_TOKEN",
    "set -x API_TOKEN (op read op://vault/api/token)",
    "we set token limits per user",
    "set the password to something memorable",  # hunter2 there is masked (s37)
    "git config --global user.name Alice",
    'gh secret set API_TOKEN --body "$API_TOKEN"',
    "gh secret list --repo o/r && echo hello | gh issue create -F -",
    "awk '{print $5$6}' data.txt && echo $1$2 costs $5",
    "x=$6$HOME",
    "db.example.com:5432:app",
    "the .pgpass format is hostname:port:database:username:password",
    "chmod 600 ~/.pgpass && psql -h db.example.com:5432 app",
    "aws configure set region eu-west-1",
    "rclone config create r s3 env_auth true",
    "lftp -u alice ftp.example.com",
    "sshpass -f pw.txt ssh alice@host",
    "xfreerdp /u:alice /v:host",
    "vault login -method=github",
    "vault login $VAULT_TOKEN",
    "consul kv put config/app/port 8080",
    "nmcli con up home",
    "nmcli con modify home wifi-sec.key-mgmt wpa-psk",
    "we need to upskill the team on pskc files",
    "the psk is set in the router",
    "requirepass $REDIS_PASSWORD",
    "Note: PSK mode is what the router uses",
    ": RSA moonKey.pem",
    ': PSK "%(PSK_FROM_ENV)s"',
    "password required",
    "password combination.",
    "Password reset flow",
    "token expired again",
    "- password: see vault",
    "sqlplus / as sysdba",
    "docker secret ls",
    "the machine learning password field",
    # OpenSSL pass-phrase arguments that say where the password is, not what it is.
    "openssl enc -aes-256-cbc -pass env:MYPASS -in a -out b",
    "openssl rsa -passin file:/etc/ssl/pw.txt -in key.pem",
    "openssl pkcs12 -export -passout stdin -out c.p12",
    "openssl enc -d -pass fd:3 -in a.enc",
    # Codes that are no secrets: an exit status, an error number, a version.
    "Exit code 1234",
    "error code 1045 from mysql",
    "zip code 94105",
    "HTTP status code 404",
    "Erlang/OTP 26 [erts-14.2.5]",
    "otp_app: :spotter",
    "pin the version to 1.15.7",
    "the code 4821 is in section 3",
    "opcode 4821 and barcode 123456 and unicode 8364",
    "verification code 12345678901 is too long for one",
    # Long numbers that are no card numbers: timestamps, ids, failing Luhn, too short.
    "priv/repo/migrations/20260211104759_add_state.exs",
    "timestamp 1733400000000 ms",
    "order 4111111111111112",
    "id: 1234567890123456",
    "4111 1111 1111",
    "version 2026.02.11.104759",
    "4532015112830366x",
    # A seed phrase's name without one.
    "write down your seed phrase and keep it somewhere safe",
    "recovery words are stored offline, never in the repo",
    "the mnemonic for the mov instruction is used by the assembler here",
    "the phrase was used in many contexts today and then again later that evening too",
    "ya29 is the prefix of a Google access token",
    # What a sentence says the password is, and a plain word not in quotes.
    'the password is "incorrect"',
    "the error says the password is 'required'",
    "the wifi password is sunshine",
    "token buckets per client: ``rate_per_minute`` over everything",  # code, in backticks
    "the token is 'rate_per_minute'",  # a name in quotes
    # Words for "password" without one after them.
    "das Passwort ist falsch",
    "Passwörter sind wichtig",
    "mot de passe oublié ?",
    "el campo contraseña es obligatorio",
    "パスワードを忘れた",
    "密码错误",
    "la parola: casa",
    "la parola è importante",
    "Passwort: $DB_PASSWORT",
]


@pytest.mark.parametrize(("text", "secret"), MASKED + MASKED_SHORT)
def test_a_probed_secret_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", UNCHANGED)
def test_the_same_shape_without_a_secret_stays(text: str) -> None:
    assert_kept(text)


def test_pgpass_lines_keep_their_first_four_fields() -> None:
    text = (
        "db.example.com:5432:app:alice:Pg7pass\n*:*:*:bob:Pg7other\n"
        "localhost:5432:*:postgres:Pg7a\\:b\n     3→h:5432:d:u:Pg7numbered\n"
        "# host:port:db:user:password\nhost:5432:db\n"
    )
    out = mask_env_file(text)
    assert "Pg7" not in out, out
    assert "db.example.com:5432:app:alice:[REDACTED:env]" in out
    assert "# host:port:db:user:password\nhost:5432:db\n" in out
    assert shows_env_file("Bash", {"command": "cat ~/.pgpass"})
    assert shows_env_file("Read", {"file_path": "/home/u/.pgpass"})
    assert not shows_env_file("Bash", {"command": "cat ~/.pgpass.example"})


def _hook(home: Path, work: Path, name: str, payload: dict[str, Any]) -> None:
    out = subprocess.run([*MEMLANE_CMD, "hook", name], input=json.dumps(payload),
                         env=run_env(home), cwd=work, capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr


def _fts_hits(db: Path, word: str) -> int:
    with sqlite3.connect(db) as conn:
        query = '"' + word.replace('"', '""') + '"'
        return len(conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?",
                                (query,)).fetchall())  # fmt: skip


def test_probed_secrets_reach_no_stored_row_nor_the_index(home: Path, tmp_path: Path) -> None:
    """Real hook processes: Bash commands and their output, a Write of ~/.pgpass."""
    work = tmp_path / "work"
    work.mkdir()
    base = {"session_id": "probe", "cwd": str(work), "hook_event_name": "PostToolUse"}
    events: list[tuple[str, dict[str, Any], str]] = [
        ("Bash", {"command": text}, "") for text, _ in MASKED
    ]
    events += [
        ("Bash", {"command": "cat ~/.pgpass"}, "db.example.com:5432:app:alice:Pgcat7secret\n"),
        ("Bash", {"command": "sudo cat /etc/shadow"}, _SHADOW + "\n"),
        ("Write", {"file_path": str(tmp_path / ".pgpass"), "content": "h:5432:a:b:Pgw7x\n"}, ""),
    ]
    for n, (tool, args, stdout) in enumerate(events):
        response: Any = {"stdout": stdout, "stderr": ""} if tool == "Bash" else {"type": "create"}
        payload = base | {"tool_name": tool, "tool_use_id": f"t{n}", "tool_input": args}
        _hook(home, work, "post-tool-use", payload | {"tool_response": response})
    db = home / "memlane.db"
    with sqlite3.connect(db) as conn:
        stored = "\n".join(row[0] for row in conn.execute("SELECT content FROM memories"))
    assert "docker login --password-stdin" in stored and "set -x API_TOKEN" in stored
    assert "db.example.com:5432:app:alice:[REDACTED:env]" in stored
    secrets = [secret for _, secret in MASKED] + ["Pgcat7secret", "Pgw7x"]
    assert [s for s in secrets if s in stored] == []
    assert leaked(db, secrets) == {}
    assert [s for s in secrets if _fts_hits(db, s)] == []
    assert _fts_hits(db, "podman") == 1  # the index holds the rest of the command


def test_a_secret_in_the_transcript_folder_is_masked_on_the_session(
    home: Path, tmp_path: Path
) -> None:
    """A transcript path is stored on the session row (and exported): a secret in a
    folder name is masked there; the hook still reads the transcript it was given."""
    folder = tmp_path / "password=Trpath7secret" / "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
    folder.mkdir(parents=True)
    transcript = folder / "s.jsonl"
    turn = {"type": "user", "sessionId": "tp", "uuid": "u1", "timestamp": "2026-01-10T09:00:00Z"}
    turn["message"] = {"role": "user", "content": "make the retry queue idempotent please"}
    transcript.write_text(json.dumps(turn) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    base = {"session_id": "tp", "cwd": str(work), "transcript_path": str(transcript)}
    for event, name in (("SessionStart", "session-start"), ("Stop", "stop")):
        _hook(home, work, name, base | {"hook_event_name": event})
    db = home / "memlane.db"
    with sqlite3.connect(db) as conn:
        (path,) = conn.execute("SELECT transcript_path FROM sessions WHERE id = 'tp'").fetchone()
        contents = [row[0] for row in conn.execute("SELECT content FROM memories")]
    assert path.startswith(str(tmp_path / "password=[REDACTED:")), path
    assert any("retry queue idempotent" in text for text in contents), contents
    export = subprocess.run([*MEMLANE_CMD, "export"], env=run_env(home),
                            capture_output=True, text=True)  # fmt: skip
    assert export.returncode == 0 and '"transcript_path"' in export.stdout, export.stderr
    secrets = ["Trpath7secret", "aBcDeFgHiJkLmNoPqRsTuVwXyZ"]
    assert [s for s in secrets if s in export.stdout] == []
    assert leaked(db, secrets) == {}


def test_the_hooks_log_masks_what_an_error_quotes(tmp_path: Path) -> None:
    from memlane.hooks.log import log_line, log_path

    logs = tmp_path / "state" / "logs"
    logs.parent.mkdir(mode=0o700)
    log_line(logs, "hook stop: FileNotFoundError: '/home/u/password=Log7secret/s.jsonl'")
    text = log_path(logs).read_text()
    assert "FileNotFoundError" in text and "Log7secret" not in text
