# ruff: noqa: E501  (corpus data: realistic snippets are long lines)
"""Regenerate the privacy corpora: ``python tests/data/privacy/make_corpus.py``.

``secrets.jsonl``: one ``{"text", "secret", "kind"}`` object per line. ``text`` is a
realistic snippet (code in several languages, logs, shell, JSON, YAML, HTTP, URLs,
PEM) holding one fake secret; ``secret`` is the substring that must be gone after
masking; ``kind`` the expected ``[REDACTED:<kind>]`` label. Key bodies are random
with a fixed seed, so the file is reproducible (a test checks it).

``ordinary.jsonl``: ``{"text"}`` objects, normal code and prose that must pass
through ``mask_secrets`` unchanged (identifiers named token/password, git SHAs,
UUIDs, base64 image data, URLs without credentials, ...). Loaded as-is by
``tests/test_privacy.py`` and by the store test that greps the database file.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALNUM = string.ascii_letters + string.digits
UPPER_NUM = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


class Gen:
    """Random fake key material from one seeded generator."""

    def __init__(self, seed: int = 20240607) -> None:
        self.rng = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        out = "".join(self.rng.choice(alphabet) for _ in range(n))
        # Every generated body carries a digit and both cases, like real keys do.
        if alphabet in (ALNUM, B64, URLSAFE) and n >= 8:
            out = "7" + out[1:-2] + "qZ"
        return out

    def aws_key(self) -> str:
        return "AKIA" + self.s(UPPER_NUM, 16)

    def aws_secret(self) -> str:
        return self.s(B64, 40)

    def ghp(self, prefix: str = "ghp_") -> str:
        return prefix + self.s(ALNUM, 36)

    def gh_fine(self) -> str:
        return "github_pat_" + self.s(UPPER_NUM, 22) + "_" + self.s(ALNUM, 59)

    def glpat(self) -> str:
        return "glpat-" + self.s(URLSAFE, 20)

    def slack(self, kind: str = "b") -> str:
        return (
            f"xox{kind}-{self.s(string.digits, 11)}-{self.s(string.digits, 12)}-{self.s(ALNUM, 24)}"
        )

    def stripe(self, prefix: str = "sk_live_") -> str:
        return prefix + self.s(ALNUM, 24)

    def openai(self) -> str:
        return "sk-proj-" + self.s(URLSAFE, 48) + "T3BlbkFJ" + self.s(URLSAFE, 40)

    def openai_legacy(self) -> str:
        return "sk-" + self.s(ALNUM, 20) + "T3BlbkFJ" + self.s(ALNUM, 20)

    def anthropic(self) -> str:
        return "sk-ant-api03-" + self.s(URLSAFE, 93) + "AA"

    def jwt(self) -> str:
        import base64

        def enc(obj: dict[str, object]) -> str:
            raw = json.dumps(obj, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")

        head = enc({"alg": "HS256", "typ": "JWT"})
        body = enc({"sub": self.s(string.digits, 8), "name": "Jane Doe", "iat": 1716000000})
        return f"{head}.{body}.{self.s(URLSAFE, 43)}"

    def password(self) -> str:
        words = ["Blue", "river", "Tango", "maple", "Orbit", "quartz", "Falcon", "ember"]
        sym = "!@#%^*-_+"
        return (
            self.rng.choice(words)
            + self.s(string.digits, 3)
            + self.rng.choice(sym)
            + self.rng.choice(words).lower()
            + self.s(string.digits, 2)
        )

    def hexs(self, n: int) -> str:
        return self.s(HEX, n)

    def pem(
        self, label: str = "RSA PRIVATE KEY", lines: int = 6, sep: str = "\n"
    ) -> tuple[str, str]:
        body = [self.s(B64, 64) for _ in range(lines)] + [self.s(B64, 20) + "=="]
        block = sep.join([f"-----BEGIN {label}-----", *body, f"-----END {label}-----"])
        return block, body[2]


def secrets_corpus() -> list[dict[str, str]]:
    g = Gen()
    out: list[dict[str, str]] = []

    def add(kind: str, secret: str, text: str) -> None:
        assert secret in text, (kind, secret)
        out.append({"text": text, "secret": secret, "kind": kind})

    # --- AWS access keys (code, shell, ini, logs, JSON)
    k = g.aws_key()
    add(
        "aws-key",
        k,
        f'import boto3\ns3 = boto3.client("s3", aws_access_key_id="{k}", region_name="eu-west-1")\n',
    )
    k = g.aws_key()
    add("aws-key", k, f"$ export AWS_ACCESS_KEY_ID={k}\n$ aws s3 ls s3://build-artifacts/\n")
    k = g.aws_key()
    add("aws-key", k, f"[default]\naws_access_key_id = {k}\nregion = us-east-1\n")
    k = g.aws_key()
    add(
        "aws-key",
        k,
        f"2024-05-02T10:11:12Z ERROR botocore: InvalidClientTokenId for key {k} (request 9f2c)\n",
    )
    k = g.aws_key()
    add("aws-key", k, f'{{"AccessKeyId": "{k}", "Status": "Active", "UserName": "ci-deployer"}}')
    k = "ASIA" + g.s(UPPER_NUM, 16)
    add(
        "aws-key",
        k,
        f"const creds = {{ accessKeyId: '{k}', sessionToken: process.env.AWS_SESSION_TOKEN }};\n",
    )
    # --- AWS secret keys
    for tmpl in (
        "[default]\naws_secret_access_key = {v}\n",
        "export AWS_SECRET_ACCESS_KEY={v}\n",
        '{{"AccessKeyId": "AKIA{k}", "SecretAccessKey": "{v}"}}',
        'Environment:\n  AWS_SECRET_ACCESS_KEY: "{v}"\n',
        'os.environ["AWS_SECRET_ACCESS_KEY"] = "{v}"\n',
    ):
        v = g.aws_secret()
        add("aws-secret", v, tmpl.format(v=v, k=g.s(UPPER_NUM, 16)))
    # --- GitHub
    t = g.ghp()
    add("github-token", t, f"git remote set-url origin https://{t}@github.com/acme/api.git\n")
    t = g.ghp()
    add("github-token", t, f"GITHUB_TOKEN={t}\ngh pr list --repo acme/web\n")
    t = g.ghp("gho_")
    add("github-token", t, f"oauth callback received token {t} for user octocat\n")
    t = g.ghp("ghs_")
    add("github-token", t, f"      - run: echo {t} | docker login ghcr.io -u x --password-stdin\n")
    t = g.gh_fine()
    add(
        "github-token",
        t,
        f'headers = {{"Authorization": "token {t}", "Accept": "application/vnd.github+json"}}\n',
    )
    t = g.ghp("ghu_")
    add("github-token", t, f"> fetched installation: ghu token={t}\n")
    t = g.ghp("ghr_")
    add("github-token", t, f'let refresh = "{t}";\n')
    # --- GitLab
    t = g.glpat()
    add(
        "gitlab-token",
        t,
        f'curl --header "PRIVATE-TOKEN: {t}" "https://gitlab.example.com/api/v4/projects"\n',
    )
    t = g.glpat()
    add("gitlab-token", t, f"git clone https://oauth2:{t}@gitlab.com/acme/infra.git\n")
    t = "glrt-" + g.s(URLSAFE, 20)
    add("gitlab-token", t, f'[[runners]]\n  name = "docker-runner"\n  token = "{t}"\n')
    t = g.glpat()
    add("gitlab-token", t, f"GITLAB_TOKEN: {t}\n")
    # --- Slack
    t = g.slack("b")
    add(
        "slack-token",
        t,
        f'client = WebClient(token="{t}")\nclient.chat_postMessage(channel="#ops", text="hi")\n',
    )
    t = g.slack("p")
    add("slack-token", t, f"SLACK_USER_TOKEN={t}\n")
    t = g.slack("b")
    add("slack-token", t, f"[2024-04-01 09:00:00] slack: posting with {t} to C024BE91L\n")
    h = f"https://hooks.slack.com/services/T{g.s(UPPER_NUM, 8)}/B{g.s(UPPER_NUM, 8)}/{g.s(ALNUM, 24)}"
    add(
        "slack-webhook",
        h,
        f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy ok\"}}' {h}\n",
    )
    h = f"https://hooks.slack.com/services/T{g.s(UPPER_NUM, 8)}/B{g.s(UPPER_NUM, 10)}/{g.s(ALNUM, 24)}"
    add("slack-webhook", h, f'alerting:\n  slack_url: "{h}"\n')
    # --- Stripe
    t = g.stripe()
    add("stripe-key", t, f"Stripe::API.key = '{t}'\n")
    t = g.stripe("sk_test_")
    add("stripe-key", t, f'const stripe = require("stripe")("{t}");\n')
    t = g.stripe("rk_live_")
    add("stripe-key", t, f"STRIPE_RESTRICTED={t}\n")
    t = "whsec_" + g.s(ALNUM, 32)
    add(
        "stripe-key",
        t,
        f"stripe listen --forward-to localhost:4242/webhook\n> Ready! Your webhook signing secret is {t} (^C to quit)\n",
    )
    # --- OpenAI
    t = g.openai()
    add("openai-key", t, f'from openai import OpenAI\nclient = OpenAI(api_key="{t}")\n')
    t = g.openai()
    add("openai-key", t, f"export OPENAI_API_KEY={t}\n")
    t = g.openai_legacy()
    add("openai-key", t, f'openai.api_key = "{t}"\n')
    t = g.openai()
    add(
        "openai-key",
        t,
        f"Error code: 401 - Incorrect API key provided: {t}. You can find your API key at https://platform.openai.com/account/api-keys.\n",
    )
    # --- Anthropic
    t = g.anthropic()
    add("anthropic-key", t, f'client = anthropic.Anthropic(api_key="{t}")\n')
    t = g.anthropic()
    add("anthropic-key", t, f"ANTHROPIC_API_KEY={t} claude -p 'summarize'\n")
    t = g.anthropic()
    add(
        "anthropic-key",
        t,
        f'curl https://api.anthropic.com/v1/messages -H "x-api-key: {t}" -H "anthropic-version: 2023-06-01"\n',
    )
    t = g.anthropic()
    add("anthropic-key", t, f'{{"env": {{"ANTHROPIC_API_KEY": "{t}"}}}}')
    # --- other providers
    t = "AIza" + g.s(URLSAFE, 35)
    add(
        "google-api-key",
        t,
        f'<script src="https://maps.googleapis.com/maps/api/js?key={t}&callback=initMap"></script>\n',
    )
    t = "AIza" + g.s(URLSAFE, 35)
    add(
        "google-api-key",
        t,
        f'firebaseConfig = {{ apiKey: "{t}", authDomain: "acme.firebaseapp.com" }}\n',
    )
    t = "npm_" + g.s(ALNUM, 36)
    add("npm-token", t, f"//registry.npmjs.org/:_authToken={t}\n")
    t = "pypi-AgEIcHlwaS5vcmc" + g.s(URLSAFE, 60)
    add("pypi-token", t, f"[pypi]\n  username = __token__\n  password = {t}\n")
    t = "hf_" + g.s(ALNUM, 34)
    add("huggingface-token", t, f"huggingface-cli login --token {t}\n")
    t = "SG." + g.s(URLSAFE, 22) + "." + g.s(URLSAFE, 43)
    add("sendgrid-key", t, f"SENDGRID_API_KEY='{t}'\n")
    # --- JWT
    for tmpl in (
        "Authorization: Bearer {t}\n",
        '{{"access_token": "{t}", "token_type": "Bearer", "expires_in": 3600}}',
        "DEBUG auth.middleware decoded session jwt={t} user=42\n",
        "Set-Cookie: id_token={t}; Path=/; HttpOnly; Secure\n",
        "localStorage.setItem('jwt', '{t}');\n",
    ):
        t = g.jwt()
        add("jwt", t, tmpl.format(t=t))
    # --- Authorization headers (opaque tokens)
    for tmpl in (
        "GET /v1/orders HTTP/1.1\nHost: api.example.com\nAuthorization: Bearer {t}\nAccept: */*\n",
        "curl -s -H 'Authorization: Bearer {t}' https://api.example.com/v2/me\n",
        "requests.get(url, headers={{'Authorization': 'Bearer {t}'}})\n",
        "> authorization: Bearer {t}\n< HTTP/2 200\n",
        "fetch(url, {{ headers: {{ Authorization: `Bearer {t}` }} }})\n",
    ):
        t = g.s(URLSAFE, 40)
        add("auth-header", t, tmpl.format(t=t))
    import base64

    for user in ("admin", "deploy", "jenkins"):
        cred = base64.b64encode(f"{user}:{g.password()}".encode()).decode()
        add("auth-header", cred, f"Authorization: Basic {cred}\n")
    # --- URL credentials
    for tmpl in (
        "DATABASE_URL=postgres://app:{p}@db.internal:5432/app\n",
        'engine = create_engine("mysql+pymysql://root:{p}@127.0.0.1/shop")\n',
        "redis_url: redis://default:{p}@cache-01:6379/0\n",
        "amqp://guest:{p}@rabbit:5672/%2F connection refused\n",
        "pip install --index-url https://ci-bot:{p}@pypi.internal.example/simple/ mylib\n",
        "mongodb+srv://svc:{p}@cluster0.abcde.mongodb.net/?retryWrites=true\n",
        "git clone https://jdoe:{p}@bitbucket.org/acme/legacy.git\n",
        "ftp://upload:{p}@files.example.net/incoming/\n",
    ):
        p = g.password()
        add("url-credentials", p, tmpl.format(p=p))
    # --- private keys (whole PEM block)
    for label in (
        "RSA PRIVATE KEY",
        "PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "EC PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
        "DSA PRIVATE KEY",
    ):
        block, line = g.pem(label)
        add("private-key", line, f"$ cat ~/.ssh/id_deploy\n{block}\n$ chmod 600 ~/.ssh/id_deploy\n")
    block, line = g.pem("PRIVATE KEY", sep="\\n")
    add(
        "private-key",
        line,
        f'{{"type": "service_account", "project_id": "acme-prod", "private_key_id": "{g.hexs(40)}", "private_key": "{block}\\n", "client_email": "svc@acme-prod.iam.gserviceaccount.com"}}',
    )
    block, line = g.pem("RSA PRIVATE KEY")
    add("private-key", line, 'TLS_KEY = """' + block + '"""\n')
    block, line = g.pem("RSA PRIVATE KEY")
    truncated = "\n".join(block.splitlines()[:5])
    add("private-key", line, f"$ head -5 server.key\n{truncated}\n")
    # --- assignments: code in several languages
    assignment_templates = [
        'DB_PASSWORD = "{p}"\n',  # python
        "db_password = '{p}'\n",
        'settings = {{"password": "{p}", "user": "svc"}}\n',
        'SECRET_KEY = "django-insecure-{h}"\n',
        "conn = psycopg2.connect(host='db', user='app', password='{p}')\n",
        'const password = "{p}";\n',  # js/ts
        "const apiKey: string = '{h}';\n",
        "  clientSecret: '{h}',\n",
        'String password = "{p}";\n',  # java
        'private static final String API_KEY = "{h}";\n',
        'var secret = "{h}";\n',  # c#/go
        'token := "{h}"\n',
        'const Password = "{p}"\n',
        "$password = '{p}';\n",  # php
        "'password' => '{p}',\n",
        "config.api_key = '{h}'\n",  # ruby
        "  password: '{p}',\n",
        'let secret_token = "{h}";\n',  # rust
        "password = {p}\n",  # ini
        'api_key = "{h}"\n',  # toml
        "  password: {p}\n",  # yaml
        '  client_secret: "{h}"\n',
        "spring.datasource.password={p}\n",  # properties
        "export DB_PASS={p}\n",  # shell
        "export SECRET='{h}'\n",
        "set PGPASSWORD={p}\n",
        '$env:API_KEY = "{h}"\n',  # powershell
        "docker run -e POSTGRES_PASSWORD={p} -d postgres:16\n",
        "mytool deploy --api-key={h} --region eu\n",
        "mytool login --password {p}\n",
        "vault login -method=userpass username=ops password={p}\n",
        "mysql -u root -p{p} shop < dump.sql\n",
        '{{"username": "ops", "password": "{p}"}}',
        '{{\\"db\\": {{\\"password\\": \\"{p}\\"}}}}',
        "<settings><servers><server><id>nexus</id><username>ci</username><password>{p}</password></server></servers></settings>\n",
        "machine api.heroku.com login ops@example.com password {p}\n",
        "2024-03-03 12:00:00 WARN login failed password={p} user=bob\n",
        "GET /callback?code=abc&access_token={h}&state=xyz\n",
        "X-API-Key: {h}\n",
        '    passphrase: "{p}"\n',
        'ENCRYPTION_KEY="{h}"\n',
        "smtp.pass = {p}\n",
        "private_key = '{h}'\n",
        'redis.auth_token = "{h}"\n',
        "ldap_bind_credentials: {p}\n",
    ]
    for tmpl in assignment_templates:
        p = g.password()
        h = g.s(ALNUM, 32)
        secret = p if "{p}" in tmpl else h
        add("assignment", secret, tmpl.format(p=p, h=h))
    # --- high entropy under a weak key name
    for tmpl in (
        'LICENSE_KEY = "{h}"\n',
        "salt: {h}\n",
        '  "signature": "{h}",\n',
        "session_id={h}\n",
        "cookie = '{h}'\n",
    ):
        h = g.s(ALNUM, 32)
        add("high-entropy", h, tmpl.format(h=h))
    return out


ORDINARY: list[str] = [
    # --- Python
    "def get_token(self):\n    return self._token\n",
    "password_field = forms.CharField(widget=forms.PasswordInput)\n",
    "class TokenizerConfig:\n    max_tokens: int = 4096\n    pad_token: str | None = None\n",
    "if not password:\n    raise ValueError('password is required')\n",
    "def login(user: str, password: str) -> bool:\n    return check_password(password, user.password_hash)\n",
    "token = request.headers.get('X-Token')\n",
    "SECRET_KEY = os.environ['SECRET_KEY']\n",
    "api_key = os.getenv('OPENAI_API_KEY')\n",
    "self.password = password\n",
    "hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt())\n",
    "tokens = tokenizer.encode(text)\nprint(len(tokens))\n",
    "for token in lexer.tokens():\n    if token.kind == 'IDENT':\n        names.append(token.value)\n",
    "secret = secrets.token_hex(32)\n",
    "credentials = service_account.Credentials.from_service_account_file(path)\n",
    "parser.add_argument('--token', help='GitHub token (default: $GITHUB_TOKEN)')\n",
    "parser.add_argument('--password-file', type=Path)\n",
    "user.set_password(form.cleaned_data['password1'])\n",
    "access_token = response.json()['access_token']\n",
    "refresh_token = None\n",
    "token_type: Literal['bearer'] = 'bearer'\n",
    "assert resp.status_code == 401, resp.text\n",
    "with open('data.json') as fh:\n    data = json.load(fh)\n",
    "logger.info('processed %d rows in %.2fs', n, elapsed)\n",
    "@pytest.fixture\ndef client(tmp_path):\n    return make_client(tmp_path / 'db.sqlite')\n",
    "import numpy as np\nx = np.linspace(0, 1, 100)\ny = np.sin(2 * np.pi * x)\n",
    "result = sorted(items, key=lambda item: item.created_at, reverse=True)\n",
    "cache_key = f'user:{user_id}:profile'\n",
    "primary_key = True\n",
    "key = (project, session_id)\n",
    "session = requests.Session()\nsession.headers.update({'User-Agent': 'memlane/0.1'})\n",
    "if token is None or token.expired:\n    token = await self.refresh()\n",
    "password: str = Field(min_length=8, description='At least 8 characters')\n",
    "def verify_signature(payload: bytes, signature: str, secret: bytes) -> bool:\n",
    "PASSWORD_MIN_LENGTH = 12\n",
    "TOKEN_EXPIRY_SECONDS = 3600\n",
    "auth = HTTPBasicAuth(username, password)\n",
    "return {'token': token, 'expires_at': expires_at.isoformat()}\n",
    "salt = os.urandom(16)\n",
    "from django.contrib.auth.hashers import make_password\n",
    "class PasswordResetView(FormView):\n    template_name = 'registration/password_reset_form.html'\n",
    "    'PASSWORD': os.environ.get('DB_PASSWORD', ''),\n",
    "raise PermissionError(f'token for {user} has expired')\n",
    "values = [row['amount'] for row in rows if row['currency'] == 'EUR']\n",
    "async def main() -> None:\n    async with httpx.AsyncClient(timeout=10) as client:\n        r = await client.get(url)\n",
    "num_tokens = len(enc.encode(prompt))\n",
    "stop_token_ids = [tokenizer.eos_token_id]\n",
    "x = torch.randn(4, 3, 224, 224)\n",
    "df = pd.read_csv('sales.csv', parse_dates=['date'])\n",
    "signature = inspect.signature(func)\n",
    "key = hashlib.sha256(content.encode()).hexdigest()\n",
    # --- JavaScript / TypeScript
    "const token = await getToken();\n",
    "const { password, ...rest } = req.body;\n",
    "export function isTokenExpired(token: string): boolean {\n  return decode(token).exp * 1000 < Date.now();\n}\n",
    "headers: { Authorization: `Bearer ${token}` },\n",
    "const apiKey = process.env.STRIPE_SECRET_KEY;\n",
    "if (!password || password.length < 8) {\n  setError('Password must be at least 8 characters');\n}\n",
    "user.password = await bcrypt.hash(password, 10);\n",
    '<input type="password" name="password" autocomplete="current-password" />\n',
    "label: 'Password',\n",
    'placeholder="Enter your password"\n',
    "const secret = crypto.randomBytes(32).toString('hex');\n",
    "import { useState, useEffect } from 'react';\n",
    "app.get('/api/health', (req, res) => res.json({ ok: true }));\n",
    "const items = data.filter((d) => d.active).map((d) => d.id);\n",
    "localStorage.removeItem('token');\n",
    "type Session = { id: string; token: string; expiresAt: Date };\n",
    "interface Credentials {\n  username: string;\n  password: string;\n}\n",
    "jwt.verify(token, process.env.JWT_SECRET, (err, decoded) => {\n  if (err) return next(err);\n});\n",
    "const csrfToken = document.querySelector('meta[name=\"csrf-token\"]').content;\n",
    "console.log(`token refreshed in ${ms}ms`);\n",
    "throw new Error('Invalid token');\n",
    # --- Go / Rust / Java / C# / Ruby / PHP
    'func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {\n\tpassword := r.FormValue("password")\n',
    "token, err := auth.ParseToken(header)\nif err != nil {\n\treturn nil, err\n}\n",
    'secret := os.Getenv("WEBHOOK_SECRET")\n',
    'let password = env::var("DB_PASSWORD").expect("DB_PASSWORD must be set");\n',
    "fn tokenize(input: &str) -> Vec<Token> {\n    input.split_whitespace().map(Token::from).collect()\n}\n",
    "public String getPassword() {\n    return password;\n}\n",
    '@Value("${app.jwt.secret}")\nprivate String secret;\n',
    "var token = await _tokenService.CreateAsync(user, cancellationToken);\n",
    "def authenticate(password)\n  BCrypt::Password.new(password_digest) == password\nend\n",
    "has_secure_password\nvalidates :password, length: { minimum: 8 }\n",
    "$password = $_POST['password'] ?? '';\n",
    "if (password_verify($password, $user->password_hash)) {\n",
    "std::vector<Token> tokens = lexer.tokenize(source);\n",
    "SELECT id, email FROM users WHERE password_reset_token = ? AND expires_at > now();\n",
    "ALTER TABLE users ADD COLUMN api_key_hash TEXT;\n",
    "CREATE INDEX idx_sessions_token ON sessions(token);\n",
    # --- shell / CLI
    "$ git log --oneline -5\n3f2a9c1 fix: handle empty token list\n8b7e6d5 feat: add password reset\n1a2b3c4 chore: bump deps\n",
    "$ docker login ghcr.io -u octocat --password-stdin < ~/.ghcr\n",
    "gh auth login --with-token < token.txt\n",
    "export GITHUB_TOKEN=$(gh auth token)\n",
    'export PATH="$HOME/.local/bin:$PATH"\n',
    'curl -H "Authorization: Bearer $TOKEN" https://api.github.com/user\n',
    'ssh-keygen -t ed25519 -C "dev@example.com" -f ~/.ssh/id_ed25519\n',
    "openssl rand -hex 32 > secret.key\n",
    "kubectl create secret generic db-creds --from-env-file=.env\n",
    "kubectl get secrets -n prod\n",
    "pip install -r requirements.txt\n",
    "npm run build && npm test -- --coverage\n",
    "cargo test --workspace --all-features\n",
    "pytest -q tests/test_auth.py::test_password_reset -x\n",
    "ls -la ~/.aws\ntotal 16\ndrwx------  2 me me 4096 May  1 10:00 .\n-rw-------  1 me me  116 May  1 10:00 config\n",
    "find . -name '*.py' -newer setup.cfg | xargs grep -l 'token'\n",
    "git push origin feature/password-reset\n",
    "sed -i 's/old_token/new_token/g' src/*.py\n",
    "$ echo $SHELL\n/bin/zsh\n",
    "tar czf backup-2024-05-01.tgz /var/lib/app\n",
    "rsync -avz --delete build/ deploy@web-01:/srv/www/\n",
    "mysql -u root -p shop < schema.sql\n",
    "psql -h localhost -U app -d app -c 'select count(*) from users'\n",
    "vault kv get -field=password secret/db\n",
    "aws sts get-caller-identity --profile prod\n",
    "aws s3 cp s3://my-bucket/reports/2024-05.csv .\n",
    # --- logs
    "2024-05-01 12:00:01,123 INFO  [main] Started Application in 3.21 seconds (JVM running for 3.9)\n",
    "2024-05-01T12:00:02Z INFO request_id=6f1c2a3b-1d2e-4f5a-9b8c-7d6e5f4a3b2c method=GET path=/api/items status=200 duration_ms=12\n",
    "WARN  token refresh failed, retrying in 5s (attempt 2/5)\n",
    "ERROR auth: invalid password for user 'alice' from 10.0.0.12\n",
    "DEBUG cache miss key=user:1234:profile ttl=300\n",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: Jane Doe <jane@example.com>\nDate:   Tue May 7 10:12:03 2024 +0200\n\n    Fix token expiry check\n",
    "Merge pull request #482 from acme/fix-session-timeout\n",
    "npm WARN deprecated request@2.88.2: request has been deprecated\n",
    "Traceback (most recent call last):\n  File \"app.py\", line 42, in <module>\n    main()\nKeyError: 'password'\n",
    "E   AssertionError: assert 'token' in {'error': 'unauthorized'}\n",
    '127.0.0.1 - - [01/May/2024:12:00:00 +0000] "POST /login HTTP/1.1" 302 0 "-" "Mozilla/5.0"\n',
    "Step 4/9 : RUN pip install --no-cache-dir -r requirements.txt\n ---> Running in 4f3e2d1c0b9a\n",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n",
    "Digest: sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4\nStatus: Downloaded newer image for python:3.11-slim\n",
    "[INFO] BUILD SUCCESS\n[INFO] Total time:  01:23 min\n",
    "kernel: [12345.678901] usb 1-1: new high-speed USB device number 5 using xhci_hcd\n",
    "Successfully installed httpx-0.27.0 anyio-4.3.0 sniffio-1.3.1\n",
    "session 7c9e6679-7425-40de-944b-e07fc1f90ae7 started for project memlane\n",
    "Applying migration 0004_add_token_index... OK\n",
    # --- JSON / YAML / TOML / config
    '{"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "name": "widget", "price": 9.99}',
    '{"token_type": "Bearer", "expires_in": 3600, "scope": "read write"}',
    '{"type": "object", "properties": {"password": {"type": "string", "minLength": 8}}}',
    '{"name": "memlane", "version": "0.1.0", "scripts": {"test": "pytest"}}',
    '"integrity": "sha512-Xyr0cBZx0ZfEJ1HGYbLgCNDGxNdQe0lRSQmbY6w3T4CW2TlxxqjgJ9X0vrzkX2ZBL4Tb5nI2CBrPW3bo7ZCvg=="',
    '{"commit": "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "branch": "main"}',
    '{"image": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}',
    "services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD_FILE: /run/secrets/db_password\n",
    "      - name: Deploy\n        env:\n          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n",
    "password:\n  min_length: 12\n  require_symbol: true\n",
    "auth:\n  provider: oidc\n  issuer: https://accounts.google.com\n",
    '[tool.ruff]\nline-length = 100\ntarget-version = "py311"\n',
    '[database]\nhost = "localhost"\nport = 5432\nname = "app"\n',
    "spring.datasource.url=jdbc:postgresql://localhost:5432/app\n",
    "log_level: debug\nworkers: 4\ntimeout: 30s\n",
    "- name: Install dependencies\n  run: pip install -e '.[dev]'\n",
    "cache:\n  key: ${{ runner.os }}-pip-${{ hashFiles('**/requirements.txt') }}\n",
    '    key: v1-deps-{{ checksum "package-lock.json" }}\n',
    "tokenizer_config.json\nspecial_tokens_map.json\nmodel.safetensors\n",
    '{"max_tokens": 1024, "temperature": 0.2, "model": "claude-sonnet"}',
    '{"sort_key": "created_at", "partition_key": "tenant_id"}',
    "AllowedHeaders:\n  - Authorization\n  - Content-Type\n",
    'password_policy = "strict"\n',
    # --- URLs
    "https://github.com/acme/memlane/pull/123/files\n",
    "See https://docs.python.org/3/library/secrets.html#secrets.token_urlsafe for details.\n",
    "https://example.com/reset-password?lang=en\n",
    "postgresql://localhost:5432/app\n",
    "git@github.com:acme/infra.git\n",
    "ssh://git@gitlab.example.com:2222/group/project.git\n",
    "http://127.0.0.1:37777/api/health\n",
    "https://user@example.com/ (no password in this URL)\n",
    "redis://cache:6379/0\n",
    "https://www.youtube.com/watch?v=dQw4w9WgXcQ\n",
    "https://en.wikipedia.org/wiki/Password_strength\n",
    # --- prose
    "The password must be at least 8 characters long and contain a digit.\n",
    "We rotate the API keys every 90 days; the old key keeps working for a week.\n",
    "To get a token, open Settings > Developer settings > Personal access tokens.\n",
    "Tokens are counted with the model's tokenizer, so a rough estimate is 4 characters per token.\n",
    "The secret to good caching is knowing when to invalidate.\n",
    "Never commit your .env file; add it to .gitignore instead.\n",
    "I changed the session timeout to 30 minutes and added a refresh token flow.\n",
    "Fixed the bug where the password reset email was sent twice.\n",
    "Use `secrets.compare_digest` to compare tokens in constant time.\n",
    "Remember: authentication says who you are, authorization says what you can do.\n",
    "The build failed because the cache key changed after the lockfile update.\n",
    "Let's pair on the auth refactor tomorrow at 10.\n",
    "Our SLA is 99.9% uptime, measured monthly.\n",
    "The migration adds an index on sessions(token) to speed up lookups.\n",
    "Decision: store only a SHA-256 of each API key, never the key itself.\n",
    "Lesson learned: test the token expiry path with a frozen clock.\n",
    "Le mot de passe doit contenir au moins huit caractères.\n",
    "Das Passwort wurde erfolgreich geändert.\n",
    "パスワードは8文字以上にしてください。\n",
    "令牌已过期，请重新登录。\n",
    "El token de acceso caduca en una hora.\n",
    "TODO: move the signing key to the KMS and drop the local fallback.\n",
    "Q: why does login fail? A: the password hash uses a different pepper in staging.\n",
    "The quick brown fox jumps over the lazy dog.\n",
    "Summary: refactored the tokenizer, added tests, updated docs.\n",
    "Next steps: wire the keyword search into the recall hook and measure latency.\n",
    "Meeting notes 2024-05-03: agreed to drop Python 3.9 support.\n",
    "It took 3.2 ms at 100k rows, 17 ms at 500k.\n",
    "The answer is 42.\n",
    # --- markdown / docs
    "## Authentication\n\nPass the token in the `Authorization` header: `Authorization: Bearer <token>`.\n",
    "| key | value |\n|-----|-------|\n| timeout | 30 |\n| retries | 3 |\n",
    "```bash\nexport OPENAI_API_KEY=your-api-key-here\n```\n",
    "Set `API_KEY=<your key>` in your environment before running the script.\n",
    "- [x] add password reset\n- [ ] rotate tokens\n",
    "> **Note**: the `token` parameter is deprecated; use `api_key` instead.\n",
    'password = ""  # set via environment\n',
    'token = ""\n',
    "password = '********'\n",
    "DB_PASSWORD=\n",
    "api_key: <YOUR_API_KEY>\n",
    "token: ${GITHUB_TOKEN}\n",
    'password: "{{ vault_db_password }}"\n',
    'secret = "${SECRET}"\n',
    'token = "xxxxxxxxxxxxxxxx"\n',
    'api_key = "YOUR_API_KEY"\n',
    'API_KEY = "OPENAI_API_KEY"  # name of the env var to read\n',
    # --- hashes, ids, data
    "3f2a9c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c\n",
    "uuid = '550e8400-e29b-41d4-a716-446655440000'\n",
    "md5sum: d41d8cd98f00b204e9800998ecf8427e  empty.txt\n",
    'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"\n',
    "x-request-id: 9b2f6c1e4d3a\n",
    "Content-Type: application/json; charset=utf-8\nContent-Length: 348\n",
    "Cache-Control: no-store\nStrict-Transport-Security: max-age=63072000\n",
    "background: url(data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7);\n",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl dev@laptop\n",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUO0Zc9h\n-----END CERTIFICATE-----\n",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n",
    "version: 1.2.3-beta.4+build.5678\n",
    "IBAN format: DE89 3704 0044 0532 0130 00 (example from the spec)\n",
    "color: #1e90ff; margin: 0 auto; padding: 4px 8px;\n",
    "lat=52.5200 lon=13.4050 alt=34m\n",
    "task-1234567890abcdefghij done\n",
    "skeleton-loader-component-v2 rendered\n",
    "risk-assessment-2024-q3-final.pdf\n",
    "desk-booking-service-1.4.2.tar.gz\n",
    "The AKIA prefix marks an AWS access key id; ASIA marks a temporary one.\n",
    "Keys start with ghp_, gho_ or ghs_ depending on their type.\n",
    "eyJ is how base64 of '{\"' begins, which is why JWTs look alike.\n",
    "sk-learn is a common misspelling of scikit-learn.\n",
    "A GitLab personal access token starts with glpat- followed by 20 characters.\n",
    "model_name = 'sentence-transformers/all-MiniLM-L6-v2'\n",
    "ARN: arn:aws:iam::123456789012:role/deploy-role\n",
    "s3://acme-build-artifacts/2024/05/01/app-3f2a9c1.zip\n",
    "Bearer tokens are defined in RFC 6750.\n",
    "Authorization: Bearer <token>\n",
    "Authorization: Basic <base64(user:pass)>\n",
    # --- more code
    "def test_login_rejects_wrong_password(client):\n    r = client.post('/login', data={'user': 'a', 'password': wrong_password})\n    assert r.status_code == 401\n",
    "while (token = next()) !== EOF) {\n  out.push(token);\n}\n",
    "password_hash = Column(String(128), nullable=False)\n",
    "api_keys = relationship('ApiKey', back_populates='owner')\n",
    "TOKEN_RE = re.compile(r'\\b[a-z]+\\b')\n",
    "let passwordVisible = false;\n",
    "showPassword ? 'text' : 'password'\n",
    'def rotate_secret(name: str) -> None:\n    """Rotate the named secret in the vault."""\n',
    "match token.kind:\n    case 'NUMBER':\n        return float(token.text)\n",
    "secret_name = 'prod/db/credentials'\n",
    "token_count += 1\n",
    "if secret is not None:\n    headers['X-Signature'] = sign(body, secret)\n",
    "keyboard = Keyboard(layout='us')\n",
    "monkeypatch.setenv('MEMLANE_HOME', str(tmp_path))\n",
    "bypass = request.args.get('bypass_cache') == '1'\n",
    "compass = Compass(heading=270)\n",
    "pwd = os.getcwd()\n",
    "PWD=/home/dev/project\n",
    "author: Jane Doe\n",
    "OAuth: see docs/oauth.md\n",
]


def write() -> tuple[int, int]:
    secrets = secrets_corpus()
    with (HERE / "secrets.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        for item in secrets:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    with (HERE / "ordinary.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        for text in ORDINARY:
            fh.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    return len(secrets), len(ORDINARY)


if __name__ == "__main__":
    n_secrets, n_ordinary = write()
    print(f"secrets={n_secrets} ordinary={n_ordinary}")
