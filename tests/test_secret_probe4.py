"""Shapes a fourth blind probe found stored readable: vendor tokens known by their
documented shape (Resend, HubSpot, LaunchDarkly, Salesforce), a prefixed UUID under a
key's name, JWK private members, a kubeconfig user's key, a secret default inside a
placeholder; and a dotted Python path that was masked though it holds no secret.
"""

from __future__ import annotations

import pytest

from tests.secret_cases import assert_kept, assert_masked

_UUID = "7c1e4a90-3b2f-4d8e-a6c5-19f0b2d7e834"

# (text, the secret it holds)
MASKED = [
    # Resend: "re_", base62 (8, "_", 24 today).
    (
        "const resend = new Resend('re_Gq4Tz7Lm_Pw2Xc9Vb6Nk3Hs8Jd5Fa1Ry');",
        "Gq4Tz7Lm_Pw2Xc9Vb6Nk3Hs8Jd5Fa1Ry",
    ),
    ("RESEND_API_KEY=re_Mv8Qn2Wk5Zt7Yp3Rc6Lx9Bh4", "Mv8Qn2Wk5Zt7Yp3Rc6Lx9Bh4"),
    ("the resend key is re_Mv8Qn2Wk5Zt7Yp3Rc6Lx9Bh4, rotate it", "Mv8Qn2Wk5Zt7Yp3Rc6Lx9Bh4"),
    # HubSpot private app tokens: pat-<region>-<uuid>.
    (f"hubspot private app token pat-na1-{_UUID}", _UUID),
    (f"client = HubSpot(access_token='pat-eu1-{_UUID}')", _UUID),
    # LaunchDarkly: sdk-, mob-, api- and a UUID.
    (f"LD_SDK_KEY=sdk-{_UUID}", _UUID),
    (f"ldclient.set_config(Config('sdk-{_UUID}'))", _UUID),
    (f"mobile key: mob-{_UUID}", _UUID),
    (f"curl -H 'Authorization: api-{_UUID}' https://app.launchdarkly.com/api/v2/flags", _UUID),
    # A prefixed UUID set to a *_KEY name is a key, whatever the vendor.
    (f"PAYMENTS_SERVICE_KEY=svc-{_UUID}", _UUID),
    (f"export ROUTING_KEY=rk_{_UUID}", _UUID),
    # Salesforce: the org id (00D + 12 or 15), "!", the session.
    (
        "sf token 00D8c000002QmRw!ARkAQJ3vT8pL2xY9zB4nC7dF1gH5jK6mN0qS3uW8eR2tY5iO7pA9sD1fG4hJ6kL"
        "8zX0cV3bN5mQ7wE9rT2yU4iO6pA8sD0fG.3hJ5kL7zX9cV1bN3mQ5wE7rT9yU1",
        "ARkAQJ3vT8pL2xY9zB4nC7dF1gH5jK6mN0qS3uW8eR2tY5iO7pA9",
    ),
]

_EC_X = "Kd3vX8q2Lr7Tn5Wz1Yb4Hc6Fj9Gm0Ps2Qe4Ru7Sv1Tw"
_EC_D = "Zt8Wq3Lp6Xn1Vb4Mc7Kd0Jf2Hg5Rs9Ty3Ue6Io8Pa1Sd"
_KUBE_KEY = "Q2xpZW50S2V5Tm90UmVhbEJ1dFJhbmRvbTdYcTJMcjlUbjRXejZZYjFIYzhGajNHbTVQcw=="
MASKED += [
    # A JWK's private members, in the object that names the key type.
    (
        f'{{"kty": "EC", "crv": "P-256", "x": "{_EC_X}", "y": "{_EC_X[::-1]}", "d": "{_EC_D}"}}',
        _EC_D,
    ),
    (
        f'{{"kty":"RSA","n":"{_EC_X * 3}","e":"AQAB","d":"{_EC_D}","p":"{_EC_D[::-1]}"}}',
        _EC_D[::-1],
    ),
    (
        "jwk = {'kty': 'oct', 'k': 'Hq7Lz2Vx9Rb4Tn6Wm1Yc3P', 'alg': 'HS256'}",
        "Hq7Lz2Vx9Rb4Tn6Wm1Yc3P",
    ),
    (f'{{"keys": [{{"kty": "OKP", "crv": "Ed25519", "x": "{_EC_X}", "d": "{_EC_D}"}}]}}', _EC_D),
    # A kubeconfig user's key, inline.
    (
        "users:\n- name: dev\n  user:\n"
        "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0t\n"
        f"    client-key-data: {_KUBE_KEY}\n",
        _KUBE_KEY[:40],
    ),
    (f'{{"user": {{"client-key-data": "{_KUBE_KEY}"}}}}', _KUBE_KEY[:40]),
    (f"    client-key: {_KUBE_KEY}", _KUBE_KEY[:40]),
    # A secret default inside a placeholder.
    ("spring.datasource.password=${DB_PASSWORD:Vq4!nT8#wLz2}", "Vq4!nT8#wLz2"),
    ("PGPASSWORD=${DB_PASSWORD:-Hx6pWq2Rm9}", "Hx6pWq2Rm9"),
    ("token: ${API_TOKEN:kLm3Pq8Zx}", "kLm3Pq8Zx"),
]

KEPT = [
    # A JWK's public members, and a "d" in an object that names no key type.
    f'{{"kty": "EC", "crv": "P-256", "x": "{_EC_X}", "y": "{_EC_X[::-1]}"}}',
    f'{{"id": 7, "d": "{_EC_D}"}}',
    # The certificates of a kubeconfig, and a key given by its path.
    "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM4akNDQWRx",
    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM4akNDQWRx",
    "    client-key: /home/me/.minikube/profiles/dev/client.key",
    # Placeholders without a secret default.
    "url: ${DB_URL:jdbc:postgresql://localhost:5432/app}",
    "password: ${DB_PASSWORD}",
    "password: ${DB_PASSWORD:?set DB_PASSWORD}",
    "ttl: ${TOKEN_TTL:3600}",
    "enabled: ${SECRET_ROTATION_ENABLED:false}",
    "file: ${DB_PASSWORD_FILE:/run/secrets/db_password}",
    "PGPASSWORD=${DB_PASSWORD:-$FALLBACK_PASSWORD}",
    # A dotted import path is no key, a digit in its words or not.
    "PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']",
    "AUTH_BACKEND = 'allauth.account.auth_backends.AuthenticationBackend'",
    "the auth class is social_core.backends.google.GoogleOAuth2",
    # Names that open with "re_" and hold no key (snake case, no mix of cases).
    "m = re_compile_pattern_for_the_parser(text)",
    "call re_authenticate_user_with_session_cookie() first",
    # A UUID alone, or under an id's name, is an identifier.
    f"LD_CLIENT_ID={_UUID}",
    f"TENANT_ID={_UUID}",
    f"request {_UUID} failed",
    f"cache_key=user-{_UUID}",
    # No region, no UUID: not HubSpot's shape; a pod's name is not LaunchDarkly's.
    "pat-na1-dashboard",
    "kubectl logs api-7d9f8b6c5-x2x7z",
    "sdk-version-2024-01-15",
]


@pytest.mark.parametrize(("text", "secret"), MASKED)
def test_a_probed_secret_is_masked(text: str, secret: str) -> None:
    assert_masked(text, secret)


@pytest.mark.parametrize("text", KEPT)
def test_the_same_shape_without_a_secret_stays(text: str) -> None:
    assert_kept(text)
