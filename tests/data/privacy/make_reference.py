# ruff: noqa: E501  (reference data: realistic snippets are long lines)
"""Regenerate the reference rule set: ``python tests/data/privacy/make_reference.py``.

``reference.jsonl``: one ``{"source", "rule", "text", "secret", "expect"}`` object per
line. The cases follow the *kinds* of test cases two public secret scanners keep for
their rules — Yelp detect-secrets (``tests/plugins/*_test.py``: one plugin per
provider, plus the keyword detector's assignment forms across languages) and
gitleaks (``cmd/generate/config/rules/*.go``: true and false positives per rule) —
written anew here: our own strings, in the same formats, with random bodies from a
fixed seed. ``expect`` is "masked" (the secret must be gone) or "kept" (the text
must come back unchanged: the scanners' own false-positive kinds, placeholders,
variables, code). Rules the scanners have and memlane does not (context-free
high-entropy strings, Twilio account SIDs) are in the set on purpose: recall counts
them as misses.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
RNG = random.Random(4242)


def r(alphabet: str, n: int) -> str:
    out = "".join(RNG.choice(alphabet) for _ in range(n))
    if alphabet in (ALNUM, B64, URLSAFE) and n >= 8:
        out = "4" + out[1:-2] + "kQ"  # like real keys: a digit and both cases
    return out


def pos(source: str, rule: str, text: str, secret: str) -> dict[str, str]:
    assert secret in text, (rule, text)
    return {"source": source, "rule": rule, "text": text, "secret": secret, "expect": "masked"}


def neg(source: str, rule: str, text: str) -> dict[str, str]:
    return {"source": source, "rule": rule, "text": text, "secret": "", "expect": "kept"}


def detect_secrets() -> list[dict[str, str]]:
    ds = "detect-secrets"
    out = []
    akia = "AKIA" + r(string.ascii_uppercase + string.digits, 16)
    aws_secret = r(B64, 40)
    out += [
        pos(ds, "AWSKeyDetector", f"aws_access_key_id = {akia}", akia),
        pos(ds, "AWSKeyDetector", f'"AccessKeyId": "{akia}",', akia),
        pos(ds, "AWSKeyDetector", f"aws_secret_access_key = {aws_secret}", aws_secret),
        pos(ds, "AWSKeyDetector", f'secretAccessKey: "{aws_secret}"', aws_secret),
    ]
    azure = r(B64, 86) + "=="
    out.append(
        pos(
            ds,
            "AzureStorageKeyDetector",
            f"DefaultEndpointsProtocol=https;AccountName=media1;AccountKey={azure};EndpointSuffix=core.windows.net",
            azure,
        )
    )
    pw = r(ALNUM, 12)
    out += [
        pos(ds, "BasicAuthDetector", f"https://deploy:{pw}@git.example.org/repo.git", pw),
        pos(ds, "BasicAuthDetector", f"amqp://guest:{pw}@rabbit:5672/", pw),
        neg(ds, "BasicAuthDetector", "http://localhost:5000/<%= @variable %>"),
        neg(ds, "BasicAuthDetector", "https://git@github.com/acme/repo.git"),
    ]
    for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
        token = prefix + r(ALNUM, 36)
        out.append(pos(ds, "GitHubTokenDetector", f"GITHUB_TOKEN={token}", token))
    for prefix in ("glpat-", "gldt-", "glrt-", "glptt-"):
        token = prefix + r(URLSAFE, 20)
        out.append(pos(ds, "GitLabTokenDetector", f"token: {token}", token))
    # High-entropy strings with no key nearby: the scanners flag them, memlane does not.
    b64 = r(B64, 32)
    hexs = r(HEX, 40)
    out += [
        pos(ds, "Base64HighEntropyString", f'data = ["{b64}"]', b64),
        pos(ds, "HexHighEntropyString", f"checksum {hexs} ok", hexs),
        neg(ds, "HexHighEntropyString", "commit 3f2a9c1d4e5b6a7f8c9d0e1f2a3b4c5d6e7f8a9b"),
    ]
    iam = r(URLSAFE, 44)
    out += [
        pos(ds, "IbmCloudIamDetector", f'ibm_cloud_iam_api_key = "{iam}"', iam),
        pos(ds, "IbmCloudIamDetector", f"IBM_API_KEY: {iam}", iam),
    ]
    jwt = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiJ" + r(URLSAFE, 30) + "." + r(URLSAFE, 43)
    out += [
        pos(ds, "JwtTokenDetector", f"Cookie: session={jwt}", jwt),
        pos(ds, "JwtTokenDetector", f'const token = "{jwt}";', jwt),
    ]
    # The keyword detector's assignment forms, one value full of symbols.
    kw = "h0p3{n0b)dy[f1nds>-_$#th1s}"
    forms = [
        f'apikey := "{kw}"',
        f"apikey :='{kw}'",
        f"apikey:= {kw}",
        f"'theapikey': '{kw}'",
        f'"theapikey": "{kw}"',
        f"apikey: {kw}",
        f'some_dict["secret"] = "{kw}"',
        f"the_password= '{kw}'\n",
        f"my_password={kw}",
        f"my_password = {kw}",
        f'apikey = @"{kw}"',
        f'private_key "{kw}";',
        f"<password>{kw}</password>",
        f'$config["db_password"] = "{kw}";',
    ]
    out += [pos(ds, "KeywordDetector", text, kw) for text in forms]
    out += [
        neg(ds, "KeywordDetector", 'theapikey := ""'),
        neg(ds, "KeywordDetector", "password: ${link}"),
        neg(ds, "KeywordDetector", 'my_password = ""'),
        neg(ds, "KeywordDetector", "my_password = foo(hey)you"),
        neg(ds, "KeywordDetector", "my_password = request.json_body['hey']"),
        neg(ds, "KeywordDetector", "my_password = True"),
        neg(ds, "KeywordDetector", "login(username=username, password=password)"),
        neg(ds, "KeywordDetector", "$password = $input;"),
        neg(ds, "KeywordDetector", "apiKey: this.apiKey,"),
        neg(ds, "KeywordDetector", "apiKey: fs.readFileSync('foo',"),
        neg(ds, "KeywordDetector", "theapikeyforfoo:hopenobodyfindsthisone"),
    ]
    mc = r(HEX, 32) + "-us14"
    out.append(pos(ds, "MailchimpDetector", f"MAILCHIMP = '{mc}'", mc))
    npm = r(ALNUM, 36)
    out += [
        pos(ds, "NpmDetector", f"//registry.npmjs.org/:_authToken={npm}", npm),
        pos(ds, "NpmDetector", f"//npm.pkg.example.com/:_authToken=npm_{npm}", "npm_" + npm),
        neg(ds, "NpmDetector", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}"),
    ]
    openai = "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20)
    out.append(pos(ds, "OpenAIDetector", f"client = OpenAI(api_key='{openai}')", openai))
    for kind in ("RSA", "EC", "DSA", "OPENSSH", "ENCRYPTED", "PGP"):
        body = "\n".join(r(B64, 64) for _ in range(3))
        block = "BLOCK" if kind == "PGP" else ""
        head = f"-----BEGIN {kind} PRIVATE KEY{' ' + block if block else ''}-----"
        tail = f"-----END {kind} PRIVATE KEY{' ' + block if block else ''}-----"
        out.append(pos(ds, "PrivateKeyDetector", f"{head}\n{body}\n{tail}\n", body.split("\n")[1]))
    pypi = "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 60)
    out.append(pos(ds, "PypiTokenDetector", f"password = {pypi}", pypi))
    sg = "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43)
    out.append(pos(ds, "SendGridDetector", f"sendgrid.api_key = '{sg}'", sg))
    slack = f"xoxb-{r(string.digits, 12)}-{r(string.digits, 13)}-{r(ALNUM, 24)}"
    hook = f"https://hooks.slack.com/services/T{r(ALNUM.upper(), 8)}/B{r(ALNUM.upper(), 8)}/{r(ALNUM, 24)}"
    out += [
        pos(ds, "SlackDetector", f"SLACK_BOT_TOKEN={slack}", slack),
        pos(ds, "SlackDetector", f"curl -X POST {hook} -d @msg.json", hook),
    ]
    sq = "sq0csp-" + r(URLSAFE, 43)
    out.append(pos(ds, "SquareOAuthDetector", f"square_secret: {sq}", sq))
    for prefix in ("sk_live_", "rk_live_"):
        key = prefix + r(ALNUM, 24)
        out.append(pos(ds, "StripeDetector", f"Stripe.api_key = '{key}'", key))
    tg = r(string.digits, 10) + ":AA" + r(URLSAFE, 33)
    out.append(pos(ds, "TelegramBotTokenDetector", f"bot = Bot('{tg}')", tg))
    sk = "SK" + r(HEX, 32)
    ac = "AC" + r(HEX, 32)
    out += [
        pos(ds, "TwilioKeyDetector", f"TWILIO_API_KEY={sk}", sk),
        pos(ds, "TwilioKeyDetector", f"account {ac} calls", ac),  # a SID: memlane keeps it
    ]
    discord = "MTE" + r(ALNUM, 21) + "." + r(URLSAFE, 6) + "." + r(URLSAFE, 27)
    out.append(pos(ds, "DiscordBotTokenDetector", f"client.run('{discord}')", discord))
    return out


def gitleaks() -> list[dict[str, str]]:
    gl = "gitleaks"
    out = []
    out += [
        pos(
            gl,
            "aws-access-token",
            f"key={(k := 'ASIA' + r(string.ascii_uppercase + string.digits, 16))}",
            k,
        ),
        pos(gl, "generic-api-key", f'"client_secret" : "{(s := r(HEX, 64))}",', s),
        pos(gl, "generic-api-key", f"CLOJARS_TOKEN={(s := 'CLOJARS_' + r(HEX, 60))}", s),
        neg(
            gl,
            "generic-api-key",
            "client_vpn_endpoint_id = aws_ec2_client_vpn_endpoint.client-vpn-endpoint.id",
        ),
        neg(gl, "generic-api-key", "password combination.\n\nR5: Regulatory--21"),
    ]
    pw1, pw2, pw3 = r(ALNUM, 10) + "$1", r(ALNUM, 16), r(ALNUM, 9) + "!t"
    out += [
        pos(
            gl,
            "curl-auth-user",
            f"curl --cacert ca.crt -u elastic:{pw1} https://localhost:9200",
            pw1,
        ),
        pos(
            gl,
            "curl-auth-user",
            f"curl -k -X POST https://x:11222/rest \\\n  -H 'Content-type: text/plain' \\\n  -u developer:{pw2}",
            pw2,
        ),
        pos(gl, "curl-auth-user", f'curl -u ":{pw3}" https://localhost:9200', pw3),
        pos(gl, "curl-auth-user", f"curl -s --user 'api:{pw3}' https://api.mail.example/v3", pw3),
        pos(
            gl,
            "curl-auth-user",
            f'curl -s -v --user "j.doe:{pw1}@qL9#4J" "https://api.example.org/me"',
            pw1,
        ),
        neg(gl, "curl-auth-user", "curl -i -u 'test:test'"),
        neg(gl, "curl-auth-user", '   curl -sL --user "$1:$2" "$3" > "$4"'),
        neg(gl, "curl-auth-user", "curl -u <user:password> https://test.com/endpoint"),
        neg(gl, "curl-auth-user", "curl --user neo4j:[PASSWORD] http://[IP]:7474/db/data/"),
        neg(gl, "curl-auth-user", 'curl -u "myusername" http://localhost:15130/api/check_user/'),
        neg(gl, "curl-auth-user", "curl -u username:token"),
        neg(gl, "curl-auth-user", 'curl -u "${_username}:${_password}"'),
        neg(gl, "curl-auth-user", 'curl -X POST --user "$(cat ./login.txt):$(cat ./password.txt)"'),
        neg(gl, "curl-auth-user", 'curl -XGET -i -u "${{ env.ELK_ID }}:${{ build.env.ELK_PASS }}"'),
    ]
    basic = r(B64, 40) + "="
    bearer = r(HEX, 32)
    out += [
        pos(gl, "curl-auth-header", f"curl -H 'Authorization: Basic {basic}' \\", basic),
        pos(
            gl,
            "curl-auth-header",
            f'curl -X GET "http://localhost:3000/api" -H "Authorization: Bearer {bearer}"',
            bearer,
        ),
        pos(
            gl,
            "curl-auth-header",
            f'curl -H "Authorization: Token {bearer}" --request PUT https://x/api',
            bearer,
        ),
        pos(gl, "curl-auth-header", f'curl -X POST --header "Api-Token: {(t := r(ALNUM, 11))}"', t),
        pos(gl, "curl-auth-header", f'curl -H "Token: {(t := r(HEX, 16))}" -d "content=hello"', t),
        pos(
            gl, "curl-auth-header", f'curl -H "X-Octopus-ApiKey: {(t := r(HEX, 8))}-{r(HEX, 4)}"', t
        ),
        neg(
            gl,
            "curl-auth-header",
            'curl https://example.com/micropub -H "Authorization: Bearer XXXXXXXXXXXX"',
        ),
        neg(
            gl,
            "curl-auth-header",
            'curl -X POST https://accounts.example.com/api/token --header "Authorization: Basic ..."',
        ),
        neg(
            gl,
            "curl-auth-header",
            'curl -H "Authorization: Bearer <Openverse API token>" "https://api.example.org/v1"',
        ),
        neg(gl, "curl-auth-header", 'curl -H "Authorization: Token **********"'),
        neg(gl, "curl-auth-header", 'curl -X GET -H "apikey: $API_KEY" "$API_URL/rest/v1/stats"'),
        neg(
            gl,
            "curl-auth-header",
            'curl -H "Authorization: Bearer $(gcloud auth print-access-token)" https://x',
        ),
    ]
    dbp = r(ALNUM + ":;<@=},!$?^", 20)
    out += [
        pos(gl, "database-password", f"DB_PASSWORD={dbp}", dbp),
        pos(gl, "database-password", f"db_password: {(p := r(ALNUM, 6) + '!')}", p),
        pos(gl, "database-password", f"$DB_PASSWD = '{(p := r(ALNUM, 15))}'", p),
        pos(gl, "database-password", f"pwd = {(p := r(ALNUM, 20) + '^')}", p),
        neg(gl, "database-password", "DB_PASSWORD=[value]"),
        neg(gl, "database-password", "somepwd=XXXXXXXXXXXXXXX"),
    ]
    tokens = {
        "github-fine-grained-pat": "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59),
        "gitlab-pat": "glpat-" + r(URLSAFE, 20),
        "slack-user-token": f"xoxp-{r(string.digits, 11)}-{r(string.digits, 12)}-{r(string.digits, 13)}-{r(HEX, 32)}",
        "stripe-access-token": "sk_test_" + r(ALNUM, 24),
        "openai-api-key": "sk-proj-" + r(URLSAFE, 48) + "T3BlbkFJ" + r(URLSAFE, 40),
        "anthropic-api-key": "sk-ant-api03-" + r(URLSAFE, 93) + "AA",
        "anthropic-admin-api-key": "sk-ant-admin01-" + r(URLSAFE, 93) + "AA",
        "gcp-api-key": "AIza" + r(URLSAFE, 35),
        "huggingface-access-token": "hf_" + r(ALNUM, 34),
        "npm-access-token": "npm_" + r(ALNUM, 36),
        "shopify-access-token": "shpat_" + r(HEX, 32),
        "digitalocean-pat": "dop_v1_" + r(HEX, 64),
        "vault-service-token": "hvs." + r(URLSAFE, 90),
        "databricks-api-token": "dapi" + r(HEX, 32),
        "mailgun-private-api-token": "key-" + r(HEX, 32),
        "age-secret-key": "AGE-SECRET-KEY-1" + r(string.ascii_uppercase + string.digits, 58),
        "doppler-api-token": "dp.pt." + r(ALNUM, 43),
        "postman-api-token": "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34),
        "linear-api-key": "lin_api_" + r(ALNUM, 40),
        "grafana-service-account-token": "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8),
        "heroku-api-key-v2": "HRKU-AA" + r(URLSAFE, 58),
        "azure-ad-client-secret": r(ALNUM, 3) + "8Q~" + r(URLSAFE + ".~", 34),
        "sentry-user-token": "sntryu_" + r(HEX, 64),
        "groq-api-key": "gsk_" + r(ALNUM, 52),
        "1password-service-account-token": "ops_eyJ" + r(B64, 250),
        "sendgrid-api-token": "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43),
        "jwt": "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJ"
        + r(URLSAFE, 40)
        + "."
        + r(URLSAFE, 86),
    }
    out += _token_cases(gl, tokens)
    k8s = r(B64, 24) + "=="
    out += [
        pos(
            gl,
            "kubernetes-secret-yaml",
            f"apiVersion: v1\nkind: Secret\ndata:\n  password: {k8s}\n",
            k8s,
        ),
        pos(
            gl,
            "django-secret-key",
            f"SECRET_KEY = 'django-insecure-{(d := r(ALNUM + '!@#$%^&*(-_=+)', 50))}'",
            d,
        ),
        neg(gl, "generic", "max_tokens = 4096"),
        neg(gl, "generic", "token_count: 12"),
        neg(gl, "generic", "request_id = 7b1e6f0c-3a52-4b8e-9d2a-0f6c1e2b3a4d"),
        neg(gl, "generic", "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())"),
        neg(gl, "generic", 'const token = localStorage.getItem("token");'),
        neg(gl, "generic", "if token is None: raise AuthError('missing token')"),
    ]
    # Added with the second held-out probe (drawn after the cases above, which keep
    # their bodies): prefixed formats gitleaks has, and a Discord bot token.
    more = {
        "notion-api-token": "ntn_" + r(string.digits, 11) + r(ALNUM, 35),
        "atlassian-api-token": "ATATT3" + r(URLSAFE, 186),
        "planetscale-api-token": "pscale_tkn_" + r(URLSAFE, 43),
        "new-relic-user-api-key": "NRAK-" + r(string.ascii_uppercase + string.digits, 27),
        "flyio-access-token": "fo1_" + r(URLSAFE, 43),
        "pulumi-api-token": "pul-" + r(HEX, 40),
        "perplexity-api-key": "pplx-" + r(ALNUM, 48),
        "prefect-api-token": "pnu_" + r(ALNUM, 36),
        "readme-api-token": "rdme_" + r(HEX, 70),
        "rubygems-api-token": "rubygems_" + r(HEX, 48),
        "shippo-api-token": "shippo_live_" + r(HEX, 40),
        "hashicorp-tf-api-token": r(ALNUM, 14) + ".atlasv1." + r(URLSAFE, 67),
        "infracost-api-token": "ico-" + r(ALNUM, 32),
        "artifactory-api-key": "AKCp" + r(ALNUM, 69),
        "grafana-api-key": "eyJrIjoi" + r(ALNUM, 90),
        "discord-bot-token": "MTE" + r(ALNUM, 21) + "." + r(URLSAFE, 6) + "." + r(URLSAFE, 38),
    }
    out += _token_cases(gl, more)
    out += [
        neg(gl, "generic", "pin: 3"),
        neg(gl, "generic", "seed = 42"),
        neg(gl, "generic", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8"),
    ]
    # Added with the third held-out probe (drawn after the cases above): more of
    # gitleaks' prefixed formats, and keyword rules whose keys hold 32 hex digits or
    # 20+ lowercase letters and digits (an entropy floor missed one hex key in five).
    third = {
        "airtable-personnal-access-token": "pat" + r(ALNUM, 14) + "." + r(HEX, 64),
        "adafruit-api-key": "aio_" + r(ALNUM, 28),
        "clojars-api-token": "CLOJARS_" + r(string.ascii_lowercase + string.digits, 60),
        "duffel-api-token": "duffel_test_" + r(URLSAFE, 43),
        "frameio-api-token": "fio-u-" + r(URLSAFE, 64),
        "harness-api-key": "pat." + r(URLSAFE, 22) + "." + r(ALNUM, 24) + "." + r(ALNUM, 20),
        "openshift-user-token": "sha256~" + r(URLSAFE, 43),
        "octopus-deploy-api-key": "API-" + r(string.ascii_uppercase + string.digits, 26),
        "sourcegraph-access-token": "sgp_" + r(HEX, 16) + "_" + r(HEX, 40),
        "sendinblue-api-token": "xkeysib-" + r(HEX, 64) + "-" + r(ALNUM, 16),
        "easypost-api-token": "EZAK" + r(ALNUM, 54),
        "flutterwave-secret-key": "FLWSECK_TEST-" + r("abcdefgh0123456789", 32) + "-X",
        "typeform-api-token": "tfp_" + r(URLSAFE, 59),
        "alibaba-access-key-id": "LTAI" + r(ALNUM, 20),
        "dropbox-short-lived-api-token": "sl." + r(URLSAFE, 135),
        "facebook-page-access-token": "EAAM" + r(ALNUM, 120),
        "square-access-token": "EAAA" + r(URLSAFE, 60),
        "microsoft-teams-webhook": "https://acme.webhook.office.com/webhookb2/"
        + f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}@"
        + f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}/IncomingWebhook/"
        + r(HEX, 32)
        + f"/{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}",
        "1password-secret-key": "A3-"
        + "-".join(r(string.ascii_uppercase + string.digits, n) for n in (6, 11, 5, 5, 5)),
        "artifactory-reference-token": "cmVmd" + r(ALNUM, 59),
        "clickhouse-cloud-api-secret-key": "4b1d" + r(ALNUM, 38),
        "aws-amazon-bedrock-api-key-long-lived": "ABSK" + r(B64, 140),
        "maxmind-license-key": r(ALNUM, 6) + "_" + r(ALNUM, 29) + "_mmk",
        "settlemint-personal-access-token": "sm_pat_" + r(ALNUM, 16),
        "gitlab-rrt": "GR1348941" + r(URLSAFE, 20),
        "intra42-client-secret": "s-s4t2ud-" + r(HEX, 64),
        "adobe-client-secret": "p8e-" + r(ALNUM, 32),
        "linear-oauth-token": "lin_oauth_" + r(HEX, 64),
    }
    out += _token_cases(gl, third)
    keyed = {
        "algolia-api-key": ("ALGOLIA_ADMIN_KEY", r(HEX, 32)),
        "datadog-access-token": ("datadog_app_key", r(HEX, 40)),
        "twitter-api-key": ("TWITTER_CONSUMER_KEY", r(string.ascii_lowercase + string.digits, 25)),
        "sidekiq-secret": ("BUNDLE_ENTERPRISE__CONTRIBSYS__COM", r(HEX, 8) + ":" + r(HEX, 8)),
    }
    for rule, (key, value) in keyed.items():
        out.append(pos(gl, rule, f"{key}={value}", value))
        out.append(pos(gl, rule, f'{key}: "{value}"', value))
    out += [
        neg(gl, "generic", "cache_key = release20240101final"),
        neg(gl, "generic", "see https://learn.microsoft.com/en-us/office/dev/add-ins/"),
        neg(gl, "generic", 'BUNDLE_PATH: "vendor/bundle"'),
        neg(gl, "generic", "patterns = pathlib.Path(patch).glob('*.pat')"),
        neg(gl, "generic", "the API-first design of sha256 hashes"),
    ]
    # Added with the fourth held-out probe (drawn after the cases above): gitleaks rules
    # with a distinctive prefix or key that a probe of the rules outside this set found
    # stored as typed. Client ids and publishable keys it also flags are not secrets here.
    upper = string.ascii_uppercase + string.digits
    lower = string.ascii_lowercase + string.digits
    fourth = {
        "gitlab-feed-token": "glft-" + r(URLSAFE, 20),
        "defined-networking-api-token": "dnkey-" + r(upper, 26) + "-" + r(upper, 52),
        "authress-service-client-access-key": "sc_"
        + r(lower, 12)
        + "."
        + r(lower, 5)
        + ".acc_"
        + r(lower, 16)
        + "."
        + r(URLSAFE, 64),
        "sonar-api-token": "squ_" + r(HEX, 40),
    }
    out += _token_cases(gl, fourth)
    jwt = base64.b64encode(
        (
            "eyJhbGciOiJIUzI1NiJ9."
            + base64.urlsafe_b64encode(f'{{"sub":"{r(lower, 12)}"}}'.encode()).decode().rstrip("=")
            + "."
            + r(URLSAFE, 43)
        ).encode()
    ).decode()
    sonar = r(HEX, 40)
    out += [
        pos(gl, "jwt-base64", f"AUTH_JWT_B64={jwt}", jwt[:40]),
        pos(gl, "jwt-base64", f"use {jwt} for the deploy", jwt[:40]),
        pos(gl, "sonar-api-token", f"mvn sonar:sonar -Dsonar.login={sonar}", sonar),
        neg(gl, "generic", "sonar.login=${SONAR_TOKEN}"),
        neg(gl, "generic", "echo ZXlKbWIyOGlPaUppWVhJaWZRPT0= | base64 -d"),
        neg(gl, "generic", "the squ_ prefix and dnkey- tokens"),
    ]
    return out


def _token_cases(source: str, tokens: dict[str, str]) -> list[dict[str, str]]:
    """Each token of a rule in a sentence and as a JSON value."""
    out = []
    for rule, token in tokens.items():
        out.append(pos(source, rule, f"use {token} for the deploy", token))
        out.append(pos(source, rule, f'{{"value": "{token}"}}', token))
    return out


def reference() -> list[dict[str, str]]:
    """The whole reference set, in a fixed order."""
    return detect_secrets() + gitleaks()


def write() -> int:
    items = reference()
    with (HERE / "reference.jsonl").open("w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    return len(items)


if __name__ == "__main__":
    print(f"reference={write()}")
