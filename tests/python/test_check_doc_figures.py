#!/usr/bin/env python3
"""scripts/check-doc-figures.py against a stand-in tilecast (a script printing fixed output) and
hand-written documents: a quote that matches passes; a doc quoting 12.3 where the build prints
12.346 -> "12.35" is stale, exit 1, the line naming the doc, the new text and the doc's old one;
a table line quoted as printed passes whatever its spacing; a number with decimals one unit of
its last place off passes (12.347 for 12.346), two units off or an integer off by one is stale; a list entry without `doc`, a
command that fails and a quote naming a field the JSON lacks stop with exit 2 and one line.
--update rewrites the stale quotes' numbers in place (the doc's words and line breaks kept),
takes a table row by its key and, of two tables' rows with one key, the one whose figures are
nearest, never breaks a quote the doc already has right, and leaves a quote whose words match
two places alike (exit 1, the doc as it was)."""
import os
import stat
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "check-doc-figures.py")

FAKE = """#!/usr/bin/env python3
import json, sys
args = sys.argv[1:]
if "--fail" in args:
    print("tilecast: --gpu: unknown GPU 'X'", file=sys.stderr); sys.exit(3)
if args[-2:] == ["--format", "json"]:
    print(json.dumps({"tpot_ms": 12.346, "memory": {"kv_cache_gb": 1.5}, "rows": [{"rate": 1234.5}]}))
else:
    print("model   on   GPU")
    print("tpot_ms       12.346  (mean decode step)")
"""


def run(root, checks, fake, *extra):
    return subprocess.run([sys.executable, SCRIPT, "--root", root, "--tilecast", fake,
                           "--checks", checks, *extra], capture_output=True, text=True)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def updated(d, checks, fake, text):
    """doc.md as `--update` leaves it, written as `text` first; the run must succeed."""
    path = os.path.join(d, "doc.md")
    write(path, text)
    r = run(d, checks, fake, "--update")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    with open(path) as f:
        return f.read()


def main():
    with tempfile.TemporaryDirectory() as d:
        fake = os.path.join(d, "tilecast")
        write(fake, FAKE)
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
        checks = os.path.join(d, "checks.yaml")
        write(checks, """
- doc: doc.md
  runs: {a: predict --model m --gpu g}
  quote: 'a step of {a[tpot_ms]:.2f} ms, {a[memory][kv_cache_gb]:.2f} GB of
    cache, {a[rows][0][rate]:,.1f} requests'
- doc: doc.md
  run: predict --model m --gpu g
  lines: 2
""")
        # Line breaks and spacing differ from the output's; the figures are the build's.
        write(os.path.join(d, "doc.md"), "Intro.\nIt takes a step of 12.35 ms, 1.50\nGB of cache, "
              "1,234.5 requests.\n\n```\nmodel on GPU\ntpot_ms 12.346 (mean decode step)\n```\n")
        r = run(d, checks, fake)
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        assert "2 quotes in 1 documents, 0 stale" in r.stdout, r.stdout

        # The doc quotes an older forecast: stale, named, with what the doc has there.
        write(os.path.join(d, "doc.md"), "It takes a step of 12.30 ms, 1.50 GB of cache, 1,234.5 "
              "requests.\n```\nmodel on GPU\ntpot_ms 12.300 (mean decode step)\n```\n")
        r = run(d, checks, fake)
        assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
        lines = [l for l in r.stdout.splitlines() if "stale:" in l]
        assert len(lines) == 2, r.stdout
        assert lines[0].startswith('doc.md: stale: the build prints "a step of 12.35 ms, 1.50 GB of '
                                   'cache, 1,234.5 requests"'), lines[0]
        assert 'the doc has "a step of 12.30 ms' in lines[0], lines[0]
        assert 'the build prints "tpot_ms 12.346 (mean decode step)"' in lines[1], lines[1]
        assert "2 quotes in 1 documents, 2 stale" in r.stdout, r.stdout

        # --update: the same stale doc rewritten in place, its words and line breaks kept.
        write(os.path.join(d, "doc.md"), "It takes a step of 12.30 ms, 1.50\nGB of cache, 1,234.5 "
              "requests.\n```\nmodel on GPU\ntpot_ms   12.300 (mean decode step)\n```\n")
        r = run(d, checks, fake, "--update")
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
        assert "2 stale lines rewritten, 0 quotes left" in r.stdout, r.stdout
        with open(os.path.join(d, "doc.md")) as f:
            assert f.read() == ("It takes a step of 12.35 ms, 1.50\nGB of cache, 1,234.5 requests.\n"
                                "```\nmodel on GPU\ntpot_ms   12.346 (mean decode step)\n```\n")
        r = run(d, checks, fake)
        assert r.returncode == 0 and "0 stale" in r.stdout, (r.returncode, r.stdout)

        # Last-digit jitter (two CPUs' BLAS kernels sum in another order): a number with decimals
        # one unit of its last place off is the same figure; two units off is stale.
        write(os.path.join(d, "doc.md"), "It takes a step of 12.36 ms, 1.49 GB of cache, 1,234.4 "
              "requests.\n```\nmodel on GPU\ntpot_ms 12.347 (mean decode step)\n```\n")
        r = run(d, checks, fake)
        assert r.returncode == 0 and "2 quotes in 1 documents, 0 stale" in r.stdout, (r.returncode, r.stdout)
        write(os.path.join(d, "doc.md"), "It takes a step of 12.36 ms, 1.49 GB of cache, 1,234.3 "
              "requests.\n```\nmodel on GPU\ntpot_ms 12.348 (mean decode step)\n```\n")
        r = run(d, checks, fake)
        assert r.returncode == 1 and "2 quotes in 1 documents, 2 stale" in r.stdout, (r.returncode, r.stdout)
        # An integer (a count of GPUs, of rows) must match; so must the number of decimals.
        checks_int = os.path.join(d, "checks-int.yaml")
        write(checks_int, "- doc: doc.md\n  runs: {a: predict}\n  quote: 'on {a[rows][0][rate]:.0f} GPUs'\n"
              "- doc: doc.md\n  runs: {a: predict}\n  quote: 'a step of {a[tpot_ms]:.2f} ms'\n")
        write(os.path.join(d, "doc.md"), "Served on 1235 GPUs, a step of 12.3 ms.\n")
        r = run(d, checks_int, fake)
        assert r.returncode == 1 and "2 quotes in 1 documents, 2 stale" in r.stdout, (r.returncode, r.stdout)
        write(os.path.join(d, "doc.md"), "Served on 1234 GPUs, a step of 12.34 ms.\n")
        r = run(d, checks_int, fake)
        assert r.returncode == 0 and "0 stale" in r.stdout, (r.returncode, r.stdout)

        # Rows of one table: the row with the quote's key; another table's row that keeps more
        # of the build's numbers is not taken when that would break a quote already right there.
        write(checks, """
- doc: doc.md
  runs: {a: predict}
  quote: '| 4 | {a[tpot_ms]:.2f} |'
- doc: doc.md
  runs: {a: predict}
  quote: '| 16 | {a[memory][kv_cache_gb]:.2f} | {a[tpot_ms]:.2f} |'
- doc: doc.md
  runs: {a: predict}
  quote: '| 16 | {a[memory][kv_cache_gb]:.2f} | 9.99 |'
""")
        table = ("| R | ms |\n|---|---|\n| 2 | 11.00 |\n| 4 | 12.00 |\n\n"
                 "| R | GB | ms |\n|---|---|---|\n| 16 | 1.50 | 12.35 |\n\n"
                 "| R | GB | x |\n|---|---|---|\n| 16 | 3.00 | 9.98 |\n")
        assert updated(d, checks, fake, table) == table.replace("| 4 | 12.00 |", "| 4 | 12.35 |").replace(
            "| 16 | 3.00 | 9.98 |", "| 16 | 1.50 | 9.99 |"), "wrong rows rewritten"

        # Two tables' rows with the same key, both stale: each quote takes the row whose figures
        # are nearest its own, even where the other table's row shares more of its numbers by
        # chance (here table B's 1.50 in the last column; counting equal numbers swapped the rows).
        write(checks, """
- doc: doc.md
  runs: {a: predict}
  quote: '| 16 | {a[tpot_ms]:.2f} | {a[memory][kv_cache_gb]:.2f} |'
- doc: doc.md
  runs: {a: predict}
  quote: '| 16 | {a[memory][kv_cache_gb]:.2f} | 7.77 |'
""")
        tables = ("| R | ms | GB |\n|---|---|---|\n| 16 | 12.30 | 1.40 |\n\n"
                  "| R | GB | x |\n|---|---|---|\n| 16 | 1.40 | 1.50 |\n")
        assert updated(d, checks, fake, tables) == tables.replace("| 16 | 12.30 | 1.40 |", "| 16 | 12.35 | 1.50 |").replace(
            "| 16 | 1.40 | 1.50 |", "| 16 | 1.50 | 7.77 |"), "rows swapped between the tables"

        # Words matching two places alike: left, named, exit 1, the doc untouched.
        write(checks, "- doc: doc.md\n  runs: {a: predict}\n  quote: 'a step of {a[tpot_ms]:.2f} ms'\n")
        twice = "First a step of 1.00 ms.\nThen a step of 2.00 ms.\n"
        write(os.path.join(d, "doc.md"), twice)
        before = os.stat(os.path.join(d, "doc.md")).st_mtime_ns
        r = run(d, checks, fake, "--update")
        assert r.returncode == 1 and "not updated (2 places match its words" in r.stdout, r.stdout
        with open(os.path.join(d, "doc.md")) as f:
            assert f.read() == twice
        assert os.stat(os.path.join(d, "doc.md")).st_mtime_ns == before, "an untouched doc was rewritten"

        # Bad lists, failing commands, unknown fields: exit 2, one line on stderr.
        write(checks, "- run: predict\n  lines: 1\n")
        r = run(d, checks, fake)
        assert r.returncode == 2 and "check 1: needs a 'doc'" in r.stderr, (r.returncode, r.stderr)
        write(checks, "- doc: doc.md\n  runs: {a: predict --fail}\n  quote: '{a[tpot_ms]}'\n")
        r = run(d, checks, fake)
        assert r.returncode == 2 and "exited 3: tilecast: --gpu: unknown GPU 'X'" in r.stderr, r.stderr
        write(checks, "- doc: doc.md\n  runs: {a: predict}\n  quote: '{a[ttft_ms]:.1f}'\n")
        r = run(d, checks, fake)
        assert r.returncode == 2 and "no such field" in r.stderr and "ttft_ms" in r.stderr, r.stderr
        write(checks, "- doc: missing.md\n  runs: {a: predict}\n  quote: '{a[tpot_ms]:.1f}'\n")
        r = run(d, checks, fake)
        assert r.returncode == 2 and "missing.md: cannot read it" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    print("check-doc-figures: ok")


if __name__ == "__main__":
    main()
