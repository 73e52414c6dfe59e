#!/usr/bin/env bash
# Memory-fit check against NeuSight's measured runs: every end-to-end label is a run that
# fitted on its GPU, so the forecast must say `fits` for it (a necessary condition; training
# labels were measured without optimizer state: --optimizer none). Also lists, per GPU, the
# configurations measured on some other GPU but not on this one, with the verdict (absence is
# not proof of an out-of-memory, so these are reported, not scored).
#   scripts/eval-memory.sh [NEUSIGHT_DIR] [BUILD_DIR]
set -euo pipefail
NS="${1:-${TILECAST_NEUSIGHT_DIR:-../shared/neusight}}"
B="${2:-build}"
[ -d "$NS/labels" ] || { echo "eval-memory: $NS/labels not found" >&2; exit 1; }
python3 - "$NS/labels" "$B/tilecast" <<'PY'
import json, os, re, subprocess, sys
labels, tc = sys.argv[1], sys.argv[2]
pat = re.compile(r"^(?P<model>[a-z0-9_]+)-(?P<mode>inf|train)-(?P<seq>\d+)-(?P<batch>\d+)(?:-(?P<par>dp\d+|tp\d+|pp\d+_\d+))?\.json$")
def forecast(gpu, m):
    args = [tc, "predict", "--model", m["model"], "--gpu", gpu, "--batch", m["batch"], "--seq", m["seq"],
            "--mode", m["mode"], "--format", "json"]
    if m["mode"] == "train": args += ["--optimizer", "none"]
    par = m["par"] or ""
    if par.startswith("dp"): args += ["--dp", par[2:]]
    if par.startswith("tp"): args += ["--tp", par[2:]]
    if par.startswith("pp"): p, mb = par[2:].split("_"); args += ["--pp", p, "--microbatches", mb]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode: return None, r.stderr.strip()
    j = json.loads(r.stdout); return j, ""
measured, rows = {}, []
for gdir in sorted(os.listdir(labels)):
    for f in sorted(os.listdir(os.path.join(labels, gdir))):
        m = pat.match(f)
        if not m: continue
        measured.setdefault(gdir, set()).add(m.group(0))
        j, err = forecast(gdir.replace("_", " "), m.groupdict())
        rows.append((gdir, f, j, err))
ok = sum(1 for r in rows if r[2] and r[2]["fits"])
print("measured run                                            memory_gb   gpu_gb  verdict")
for gdir, f, j, err in rows:
    if j: print("%-22s %-32s %8.2f %8.0f  %s" % (gdir, f, j["memory_gb"], j["gpu_memory_gb"], "fits" if j["fits"] else "DOES NOT FIT"))
    else: print("%-22s %-32s  error: %s" % (gdir, f, err))
print("\n%d of %d measured runs forecast to fit (%d not forecast)" % (ok, len(rows), sum(1 for r in rows if not r[2])))
allcfg = set().union(*measured.values())
print("\nconfigurations measured elsewhere but not on this GPU (not scored):")
for gdir in sorted(measured):
    missing = sorted(c for c in allcfg - measured[gdir] if "-inf-" not in c or True)
    verdicts = []
    for c in missing:
        j, _ = forecast(gdir.replace("_", " "), pat.match(c).groupdict())
        if j: verdicts.append("%s %s" % (c[:-5], "fits" if j["fits"] else "no"))
    if verdicts: print("  %s: %s" % (gdir, "; ".join(verdicts)))
PY
