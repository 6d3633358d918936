"""Secret masking figures: recall, leaks, ordinary text untouched, prefilter speed.

Printed, not asserted (the tests assert the floors):

1. the reference rule set (``tests/data/privacy/reference.jsonl``, cases written after
   the kinds of detect-secrets' plugin tests and gitleaks' rule examples): recall on
   the secrets, share of the false-positive kinds left unchanged;
2. generated secrets (``tests/secret_cases.py``: every key form × quoting × separator,
   values from the full printable set, fixed seed): how many a documented exclusion
   takes, and how many leave a 6-character piece behind, by form;
3. the hand-written corpora of ``tests/data/privacy`` (secrets, near-miss code);
4. ordinary text: the lines of the project's own source and docs (not the privacy
   modules, not the tests) and of the real transcripts (when ../shared is there)
   that masking leaves untouched, and the kinds of lines it changes;
5. ``needs_scrub``: how much text skips the filter, and what the check costs (CPU
   time of the process, best of a few runs);
6. LongMemEval's chat turns: how many masking changes, by kind, and the prefilter's cost;
7. many keys on one long line against the same keys one per line;
8. crafted texts for the rules of the third held-out probe (a run of one rule's
   opening, a name of underscores, a path of thousands of parts…) and for older rules
   (a key repeated thousands of times on one line), and for the tag scan (runs of "<",
   of escapes, of blanks or of a namespace prefix near a tag) at n and 4n characters: a
   linear rule takes ~4× as long (the Bundler rule and seven older ones took ~16×);
9. pathological inputs of 200 KB that a blind probe found slow (36th session): a word
   read again in each window of its repeats, a user option read 200 characters on at
   each repeat. Wall and CPU time, best of 3 (the CPU time is steadier on a busy machine);
10. 200 KB of ordinary text (the project's source and docs): what scrub costs there.

Run: ``.venv/bin/python benchmarks/secrets_bench.py [--cases N] [--fixtures DIR]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "privacy"
FIXTURE_DIRS = [
    ROOT.parent / "shared" / "fixtures" / "claude-code-transcripts",
    ROOT.parents[1] / "shared" / "fixtures" / "claude-code-transcripts",  # a git worktree
]
sys.path.insert(0, str(ROOT))


def _jsonl(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def reference() -> None:
    from memlane.privacy import scrub

    items = _jsonl(DATA / "reference.jsonl")
    positives = [i for i in items if i["expect"] == "masked"]
    negatives = [i for i in items if i["expect"] == "kept"]
    missed = [i["rule"] for i in positives if i["secret"] in scrub(i["text"])]
    changed = [i["rule"] for i in negatives if scrub(i["text"]) != i["text"]]
    by_source = collections.Counter(i["source"] for i in positives)
    print(f"reference set ({dict(by_source)} secrets, {len(negatives)} false-positive kinds):")
    print(f"  recall {len(positives) - len(missed)}/{len(positives)}"
          f" ({1 - len(missed) / len(positives):.1%}); missed: {missed}")  # fmt: skip
    print(
        f"  false-positive kinds left unchanged {len(negatives) - len(changed)}/"
        f"{len(negatives)} ({1 - len(changed) / len(negatives):.1%}); changed: {changed}"
    )


def generated(count: int, seed: int) -> None:
    from tests.secret_cases import excluded, leaks, seeded_cases

    from memlane.privacy import scrub

    cases = seeded_cases(count, seed)
    per_form: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    reasons: collections.Counter[str] = collections.Counter()
    started = time.process_time()
    for case in cases:
        counts = per_form[case.form]
        why = excluded(case)
        if why:
            counts[1] += 1
            reasons[why] += 1
            continue
        counts[0] += 1
        if leaks(case, scrub(case.text)):
            counts[2] += 1
    seconds = time.process_time() - started
    checked = sum(c[0] for c in per_form.values())
    leaked = sum(c[2] for c in per_form.values())
    print(f"generated secrets (seed {seed}): {len(cases)} in {len(per_form)} forms,"
          f" {checked} checked, {leaked} leaked, {len(cases) - checked} excluded"
          f" ({(len(cases) - checked) / len(cases):.1%}): {dict(reasons)}"
          f" [{seconds * 1e6 / len(cases):.0f} µs per case]")  # fmt: skip
    for form, (ok, out, bad) in sorted(per_form.items()):
        if out or bad:
            print(f"  {form:<20} checked {ok:>4}, excluded {out:>3}, leaked {bad}")


def corpora() -> None:
    from memlane.privacy import mask_secrets

    secrets = _jsonl(DATA / "secrets.jsonl")
    ordinary = _jsonl(DATA / "ordinary.jsonl")
    gone = sum(item["secret"] not in mask_secrets(item["text"]) for item in secrets)
    kept = sum(mask_secrets(item["text"]) == item["text"] for item in ordinary)
    print(f"hand-written corpora: secrets masked {gone}/{len(secrets)};"
          f" near-miss code unchanged {kept}/{len(ordinary)}")  # fmt: skip


def _fixtures(explicit: str | None) -> Path | None:
    for path in [Path(explicit)] if explicit else FIXTURE_DIRS:
        if path.is_dir():
            return path
    return None


def ordinary_text(fixtures: Path | None) -> list[str]:
    import difflib

    from memlane.privacy import mask_secrets

    sources = [
        p
        for p in sorted((ROOT / "src").rglob("*.py"))
        if not p.name.startswith(("secret_", "privacy"))
    ]
    sources += [ROOT / name for name in ("README.md", "BENCHMARKS.md", "CHANGELOG.md")]
    documents = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sources]
    transcripts: list[str] = []
    if fixtures is not None:
        from memlane.capture.transcript import iter_turns

        for path in sorted(fixtures.rglob("*.jsonl")):
            transcripts.extend(turn.text for turn in iter_turns(str(path)))
        documents += [("transcripts", text) for text in transcripts]
    totals: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    changed: list[str] = []
    for name, text in documents:
        group = "transcripts" if name == "transcripts" else "source and docs"
        lines = text.splitlines()
        totals[group][0] += len(lines)
        out = mask_secrets(text)
        if out == text:
            continue
        ops = difflib.SequenceMatcher(a=lines, b=out.splitlines(), autojunk=False).get_opcodes()
        for tag, i1, i2, _, _ in ops:
            if tag != "equal":
                totals[group][1] += i2 - i1
                changed.extend(f"{name}: {line.strip()[:100]}" for line in lines[i1:i2])
    print("ordinary text (lines left untouched by masking):")
    for group, (total, bad) in totals.items():
        print(f"  {group:<16} {total - bad}/{total} ({1 - bad / max(total, 1):.2%})")
    if fixtures is None:
        print("  (real transcripts absent: pass --fixtures DIR)")
    for line in changed[:20]:
        print(f"  changed: {line}")
    return transcripts


def prefilter(transcripts: list[str]) -> None:
    from memlane.privacy import needs_scrub, scrub

    ordinary = [item["text"] for item in _jsonl(DATA / "ordinary.jsonl")]
    print("needs_scrub False (the whole filter skipped):")
    for label, texts in (("real transcript turns", transcripts), ("near-miss code", ordinary)):
        if not texts:
            continue
        skipped = sum(not needs_scrub(t) for t in texts)
        size = sum(map(len, texts)) / 1000
        best = min(_time(lambda texts=texts: [needs_scrub(t) for t in texts]) for _ in range(5))
        full = min(_time(lambda texts=texts: [scrub(t) for t in texts]) for _ in range(3))
        print(f"  {label:<22} {skipped}/{len(texts)} ({skipped / len(texts):.0%});"
              f" needs_scrub {best * 1e6 / size:.0f} µs, scrub {full * 1e6 / size:.0f} µs"
              " per 1,000 chars")  # fmt: skip


def chat_turns() -> None:
    """LongMemEval's chat turns (real_vectors.py's source, when ../shared is there):
    which ones masking changes, by kind — personal chat holds numbers, codes and words
    that look like the new rules' (a card, a PIN) but are none — and what the
    prefilter costs on them (CPU, best of 3)."""
    import re

    from real_vectors import source_file, texts_of

    from memlane.privacy import needs_scrub, scrub

    try:
        path = source_file(None)
    except SystemExit:
        print("chat turns: LongMemEval data absent (../shared/benchmarks/longmemeval)")
        return
    texts, _ = texts_of(path)
    kinds: collections.Counter[str] = collections.Counter()
    changed = 0
    for text in texts:
        out = scrub(text)
        if out != text:
            changed += 1
            kinds.update(re.findall(r"\[REDACTED:([a-z0-9-]+)\]", out))
    best = min(_time(lambda: [needs_scrub(t) for t in texts]) for _ in range(3))
    print(f"chat turns ({path.name}): {len(texts):,} distinct, {changed} changed by masking"
          f" {dict(kinds.most_common())}; needs_scrub over all {best:.2f} s CPU")  # fmt: skip


def _time(run: object) -> float:
    # CPU time of this process: on a machine shared with other jobs, wall time mostly
    # measures the others.
    started = time.process_time()
    run()  # type: ignore[operator]
    return time.process_time() - started


def long_lines() -> None:
    """Many keys on one line (a minified bundle, a crafted file) against the same keys
    one per line (the baseline): each key's rule reads a bounded part of its line, so
    the ratio stays near 1 as the line grows (it grew with the line before)."""
    from memlane.privacy import scrub

    print("keys on one line vs one per line (wall, best of 3):")
    for keys in (1_000, 4_000, 16_000):
        one = _best(lambda keys=keys: scrub("password=Hunter2xyz " * keys))
        apart = _best(lambda keys=keys: scrub("password=Hunter2xyz\n" * keys))
        ratio = one / apart
        print(f"  {keys:>6,} keys: {one * 1000:8.1f} ms vs {apart * 1000:8.1f} ms ({ratio:.2f}x)")


# Texts a crafted file could hold, each the worst case of one rule's regex or value check.
CRAFTED = {
    "Bundler name of underscores": lambda n: "BUNDLE_" + "__" * (n // 2) + "x",
    "Bundler names on one line": lambda n: ("BUNDLE_" + "A_" * 20 + " ") * (n // 48),
    "22 'A's then a run": lambda n: "A" * n,
    "'pat' in every word": lambda n: "path " * (n // 5),
    "SettleMint openings": lambda n: "sm_pat_" * (n // 7),
    "a path of parts": lambda n: "password=" + "/a" * (n // 2),
    "base36 under a weak name": lambda n: "app_key=" + "a1" * (n // 2),
    "an amount of digits": lambda n: "pass: $" + "1" * n,
    # Older rules the sweep of this section found quadratic (22nd session).
    "'key-' repeated (qualifiers)": lambda n: "key-" * (n // 4),
    "'pat:' repeated (weak values)": lambda n: "pat:" * (n // 4),
    "'cookie:' repeated": lambda n: "cookie:" * (n // 7),
    "'rar ' repeated (tool options)": lambda n: "rar " * (n // 4),
    "'sk-' repeated": lambda n: "sk-" * (n // 3),
    "'eyJ-' repeated (JWT)": lambda n: "eyJ-" * (n // 4),
    "pgpass then slashes": lambda n: "pgpass" + "/" * n,
    # The tag pattern's bounded look-ahead for a ">" (25th session).
    "'<private' and 511 blanks": lambda n: ("<private" + " " * 511) * (n // 519),
    "'<private ' repeated": lambda n: "<private " * (n // 9),
    # Tags escaped twice, blanks after "<", namespace prefixes, glued tokens (26th
    # session); a block first, so that the tag regexes run on the rest.
    "'<' repeated": lambda n: _BLOCK + "<" * n,
    "'%25' repeated": lambda n: _BLOCK + "%25" * (n // 3),
    "'&amp;' repeated": lambda n: _BLOCK + "&amp;" * (n // 5),
    "'<' then blanks": lambda n: _BLOCK + "<" + " \n" * (n // 2) + "x",
    "'<' then a prefix": lambda n: _BLOCK + "<" + "a" * n + ":privat",
    "'<a:' repeated": lambda n: _BLOCK + "<a:" * (n // 3),
    "a prefix before ':private'": lambda n: "%3c" + "a" * n + ":private x",
    "glued 'ghp_' tokens": lambda n: ("x" + "ghp_" + "a1" * 18) * (n // 41),
    "'ghp_' then a run": lambda n: "ghp_" + "a" * n,
    # A secret word on a sibling key: bounded gaps to "value"/"default" (28th session).
    "'\"sensitive\": true,' repeated": lambda n: '"sensitive": true,' * (n // 18) + '"value"',
    "'variable \"pw\" {' repeated": lambda n: 'variable "pw" {' * (n // 15) + "default",
    "'variable \"' then a run": lambda n: 'variable "' + "a" * n,
    "'rabbitmqctl x' repeated": lambda n: "rabbitmqctl x " * (n // 14),
    "'net use' then a share, repeated": lambda n: "net use \\\\s " * (n // 12),
    '\'"Type": "SecureString"\' repeated': lambda n: (
        '"Type":"SecureString"' * (n // 21) + '"Value"'
    ),
    # A key's END line reads back at most 200 base64 lines (28th session).
    "base64 lines, an END line each 100": lambda n: (
        (("A" * 63 + "\n") * 99 + "-----END RSA PRIVATE KEY-----\n") * (n // 6400 + 1)
    ),
    "'Authorization \"' repeated": lambda n: 'Authorization "' * (n // 15),
    # A command line that reveals a secret reads its next 20 lines at most (28th session).
    "'$ pass show x' lines": lambda n: "$ pass show x\n" * (n // 14),
    "'$ secret' then a long line": lambda n: "$ secret " + "a" * n + "\nout",
    # The family of revealing commands (29th session): command lines of ~2,000
    # characters, each a run of one opening, with a line of output after it.
    "'$ … secret | jq' lines": lambda n: _lines("kubectl get secret x | jq " * 75, n),
    "'$ gpg x' lines": lambda n: _lines("gpg x " * 330, n),
    "'$ heroku config:set' lines": lambda n: _lines("heroku config:set " * 110, n),
    "'$ get-secret-value --query id'": lambda n: _lines("get-secret-value --query id " * 70, n),
    "'$ ssm get-parameter' lines": lambda n: _lines(
        "ssm get-parameter " * 110 + "--with-decryption", n
    ),
    "'rabbitmqctl authenticate_user'": lambda n: "rabbitmqctl authenticate_user x " * (n // 32),
    # "value" before "sensitive": true reads at most 400 characters on (29th session).
    '\'"value": "a",\' repeated': lambda n: '"value": "a",' * (n // 13) + '"sensitive": true',
    # A password word reads 8 words after it and 4 before, within 200 characters (29th session).
    "'password ' repeated": lambda n: "password " * (n // 9),
    "'login a@1!' repeated": lambda n: "login a@1!xyzw " * (n // 15),
    # A secret column reads its header line and at most 200 rows of 4,000 characters.
    "'password,' repeated on a line": lambda n: "password," * (n // 9) + "\n" + "x," * (n // 2),
    "a CSV, password column": lambda n: "u,password\n" + "a,Xk9!mzq2\n" * (n // 11),
    "'password\\n,' lines": lambda n: "password\n," * (n // 10),
    # Recovery codes read a list of at most 64; app passwords four groups (29th session).
    "'recovery codes: abcd-efgh ' repeated": lambda n: "recovery codes: abcd-efgh " * (n // 26),
    "'app password: abcd ' repeated": lambda n: "app password: abcd " * (n // 19),
    "'&lt;password&gt;x' repeated": lambda n: "&lt;password&gt;x" * (n // 17),
    "'&lt;password&gt;' then a run": lambda n: "&lt;password&gt;" + "a" * n,
    '\'ENV["X"] = "\' repeated': lambda n: 'ENV["X"] = "' * (n // 12),
    "'$ base64 -x' then a run": lambda n: "$ base64" + " -x" * (n // 3) + "\nout",
    # The 30th session's rules: a query's app key, an RPC provider's path, a vendor's
    # name before a UUID, a wrapped token's tail, a secret store's value, a license key,
    # a passphrase's words, a Terraform output named for a secret.
    "'&appid=a' repeated": lambda n: "&appid=a" * (n // 8),
    "'?ak=' then a run": lambda n: "?ak=" + "a1" * (n // 2),
    "'.infura.io/v3/' repeated": lambda n: ".infura.io/v3/" * (n // 14),
    "'rpc.ankr.com/' then a run": lambda n: ".rpc.ankr.com/" + "a" * n,
    "'SNYK_' repeated": lambda n: "SNYK_" * (n // 5) + "=",
    "'snyk=' repeated": lambda n: "snyk=" * (n // 5),
    "markers then long runs": lambda n: ("[REDACTED:x]\n" + "a" * 5000 + "!\n") * (n // 5015 + 1),
    "'[REDACTED:x]\\n' repeated": lambda n: "[REDACTED:x]\n" * (n // 13),
    "'keyvault secret set' on a line": lambda n: "keyvault secret set " * (n // 20),
    "'license=' repeated": lambda n: "license=" * (n // 8),
    "'license: ABCD-' run": lambda n: "license: " + "ABC1-" * (n // 5),
    "'password: a ' on a line": lambda n: "password: a " * (n // 12),
    "'$ terraform output' lines": lambda n: _lines("terraform output " * 110, n),
    # Each INI-style key line looks up for its section header (s38).
    "'password = abc' lines": lambda n: "password = abc\n" * (n // 15),
}
_BLOCK = "<private>x</private> "


def _lines(command: str, n: int) -> str:
    """``$ command`` and a line of output, repeated to about n characters."""
    line = f"$ {command}\nout\n"
    return line * max(1, n // len(line))


def crafted() -> None:
    """Each crafted text at 20,000 and 80,000 characters: the time and the ratio."""
    from memlane.privacy import scrub

    print("crafted texts, 20,000 vs 80,000 characters (wall, best of 3; linear ~4x):")
    for name, make in CRAFTED.items():
        small = _best(lambda make=make: scrub(make(20_000)))
        large = _best(lambda make=make: scrub(make(80_000)))
        print(f"  {name:28} {small * 1000:7.1f} ms {large * 1000:8.1f} ms ({large / small:.1f}x)")


# 200 KB of one unit repeated: a word whose gates and rules read the words around each
# of its places ("password? ", "pass is x "; the 37th session's "set the " of the reset
# rule, "my password " and "PIN for " read to a value without a connector, "x * y *"
# lines of chap-secrets), a user option with no password option.
PATHOLOGICAL = (
    "password? ", "pass is x ", "-u x ", "set the ", "my password ", "PIN for ", "x * y *\n",
)  # fmt: skip
PATHOLOGICAL_CHARS = 200_000


def pathological() -> None:
    """Each pathological text at 200 KB: wall and CPU time of scrub, best of 3."""
    from memlane.privacy import scrub

    print(f"pathological texts, {PATHOLOGICAL_CHARS:,} characters (best of 3):")
    for unit in PATHOLOGICAL:
        wall = cpu = float("inf")
        for run in range(3):
            # A new text each run: the gates remember their answers for the last text.
            text = unit * (PATHOLOGICAL_CHARS // len(unit) - run)
            started, started_cpu = time.perf_counter(), time.process_time()
            scrub(text)
            wall = min(wall, time.perf_counter() - started)
            cpu = min(cpu, time.process_time() - started_cpu)
        name = f"{unit!r} repeated"
        print(f"  {name:28} wall {wall * 1000:7.1f} ms   cpu {cpu * 1000:7.1f} ms")


def normal_text() -> None:
    """scrub of 200 KB of ordinary text (the project's own source and docs, not the
    privacy modules): what a common word of a rule's gate ("set", "my") costs."""
    from memlane.privacy import needs_scrub, scrub

    sources = [
        p
        for p in sorted((ROOT / "src").rglob("*.py"))
        if not p.name.startswith(("secret_", "privacy"))
    ]
    sources += [ROOT / "README.md"]
    whole = "\n".join(p.read_text(encoding="utf-8") for p in sources)
    wall = cpu = gate = float("inf")
    for run in range(3):
        text = whole[run : PATHOLOGICAL_CHARS + run]  # a new text each run (see above)
        started, started_cpu = time.perf_counter(), time.process_time()
        scrub(text)
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - started_cpu)
        started = time.perf_counter()
        needs_scrub(text[1:])
        gate = min(gate, time.perf_counter() - started)
    print(f"ordinary text, {PATHOLOGICAL_CHARS:,} characters of source and docs (best of 3):")
    print(f"  scrub wall {wall * 1000:7.1f} ms   cpu {cpu * 1000:7.1f} ms;"
          f" needs_scrub {gate * 1000:.1f} ms")  # fmt: skip


def _best(run: object, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=3100, help="generated secrets")
    parser.add_argument("--seed", type=int, default=20240607)
    parser.add_argument("--fixtures", help="directory of real Claude Code transcripts")
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    reference()
    generated(args.cases, args.seed)
    corpora()
    transcripts = ordinary_text(_fixtures(args.fixtures))
    prefilter(transcripts)
    chat_turns()
    long_lines()
    crafted()
    pathological()
    normal_text()


if __name__ == "__main__":
    main()
