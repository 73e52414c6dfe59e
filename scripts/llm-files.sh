# Sourced by the LLM-era evaluation scripts (needs $LLM, the llm-kernels root): which files hold
# a training GPU's rows of a family, and which GPUs each family has.
#   gemm:                 A100-SXM4-80GB, L40S, B200 (aiconfigurator) + A100, A40 (vidur) + RTX 4090 (LLMServingSim)
#   context_attention, generation_attention, moe: A100-SXM4-80GB, L40S, B200 (aiconfigurator)
#   memory_op:            A100, A40 (vidur) + RTX 4090 (LLMServingSim)
# Files holding a GPU's rows of a family.
files_of() {  # family gpu
  local fam=$1 gpu=$2
  case "$gpu" in
    A100-SXM4-80GB)
      [ "$fam" != memory_op ] && echo "$LLM/aiconfigurator/$gpu/${fam}_perf.csv"
      if [ "$fam" = gemm ] || [ "$fam" = memory_op ]; then ls "$LLM"/vidur/a100/*/*/mlp.csv; fi ;;
    L40S|B200) echo "$LLM/aiconfigurator/$gpu/${fam}_perf.csv" ;;
    A40) ls "$LLM"/vidur/a40/*/*/mlp.csv ;;
    "GeForce RTX 4090") ls "$LLM"/llmservingsim/RTX4090/*/*/*/tp*/dense.csv ;;
  esac
}
gpus_of() {  # family
  case "$1" in
    gemm) printf '%s\n' A100-SXM4-80GB L40S B200 A40 "GeForce RTX 4090" ;;
    memory_op) printf '%s\n' A100-SXM4-80GB A40 "GeForce RTX 4090" ;;
    *) printf '%s\n' A100-SXM4-80GB L40S B200 ;;
  esac
}

# One line per dtype of a family's rows in an eval-kernels JSON report.
report_lines() {  # json gpu family
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
gpu, fam = sys.argv[2], sys.argv[3]
ops = {"memory_op": ("rmsnorm", "silu_mul", "rope", "residual_add")}.get(fam, (fam,))
for k, s in sorted(r["by_op_dtype"].items()):
    if k.split("/")[0] in ops:
        print(f"{fam:20s} {gpu:16s} {k:24s} rows {s['rows']:7d}  MAPE {s['mape_pct']:7.2f} %  p50 {s['p50_ape_pct']:6.2f} %  "
              f"p90 {s['p90_ape_pct']:7.2f} %  roofline {s['roofline_mape_pct']:7.2f} %  "
              f"implausible {s['implausible_rows']:6d}  plausible MAPE {s['plausible_mape_pct']:7.2f} %"
              + (f"  bias {s['bias_median']:5.2f}" if "bias_median" in s else "")
              + (f"  fitted roofline {s['prior_mape_pct']:7.2f} % (plausible {s['prior_plausible_mape_pct']:7.2f} %)"
                 if "prior_mape_pct" in s else ""))
# The whole left-out GPU (every dtype of the family): the rows of the GPU's own device entry.
for dev, fams in sorted(r.get("by_device_op", {}).items()):
    if fam in fams and len([k for k in r["by_op_dtype"] if k.split("/")[0] == fam]) > 1:
        s = fams[fam]
        print(f"{fam:20s} {gpu:16s} {'(all dtypes)':24s} rows {s['rows']:7d}  MAPE {s['mape_pct']:7.2f} %"
              + (f"  fitted roofline {s['prior_mape_pct']:7.2f} %" if "prior_mape_pct" in s else ""))
PY
}

# Sets family FAM's config key KEY (unseen_prior_weight, gemm_composite_weight: the weights of
# the blends on GPUs outside network_gpus) to W in a weights manifest, in place (temporary file
# and rename). The family's entry is the block under "  FAM:" (two-space keys are the
# families). Its line is rewritten; a family trained with `network_gpus` but the key's default
# (which the manifest does not write) gets the line after its `network_gpus` line; a family
# without `network_gpus` (its network serves every GPU) is an error and leaves the manifest
# unchanged.
set_family_config() {  # manifest family key value
  local m=$1 fam=$2 key=$3 wt=$4
  local has
  has=$(awk -v fam="$fam:" -v key="$key:" '/^  [A-Za-z0-9_]+:$/ { infam = ($1 == fam) }
      infam && $1 == key && /^      [a-z_]+: / { n++ } END { print n + 0 }' "$m")
  if ! awk -v fam="$fam:" -v key="$key" -v wt="$wt" -v has="$has" '
      /^  [A-Za-z0-9_]+:$/ { infam = ($1 == fam) }
      infam && has > 0 && $1 == key ":" && /^      [a-z_]+: / { sub(/: .*/, ": " wt); done = 1 }
      { print }
      infam && has == 0 && /^      network_gpus: / { print "      " key ": " wt; done = 1 }
      END { if (!done) exit 3 }' "$m" > "$m.tmp"; then
    rm -f "$m.tmp"
    echo "$m: family '$fam' has no $key (train it with network_gpus set)" >&2
    return 1
  fi
  mv "$m.tmp" "$m"
}
set_unseen_prior_weight() {  # manifest family weight
  set_family_config "$1" "$2" unseen_prior_weight "$3"
}

# Replaces, in a fold's weights (FOLD/manifest.yaml and its files), every family the fold did
# not train (not a first column of TRAINED, its train CSV) with the bundled one (BUNDLE,
# default weights/): a fold copies the bundled weights when it is trained, and those may since
# have changed their inputs (session 62 renamed prefill's memory input, so folds trained before
# were refused whole: "feature list differs ... (retrain)"). Families absent from either
# manifest are left as they are. The manifest is written to a temporary file and renamed.
refresh_untrained_families() {  # fold trained_csv [bundle]
  python3 - "$1" "$2" "${3:-weights}" <<'PY'
import os, re, shutil, sys
fold, trained_csv, bundle = sys.argv[1:4]
with open(trained_csv) as f:
    trained = {line.split(",")[0] for line in f.read().splitlines()[1:] if line}

def families(path):
    """The manifest's lines, and each family's [start, end) line range under `families:`."""
    with open(path) as f:
        lines = f.read().splitlines(True)
    if "families:\n" not in lines:
        sys.exit(f"{path}: no 'families:' block")
    out, name, start = {}, None, None
    k = lines.index("families:\n") + 1
    while k < len(lines) and lines[k].startswith("  "):
        m = re.match(r"^  ([A-Za-z0-9_]+):\s*$", lines[k])
        if m:
            if name:
                out[name] = (start, k)
            name, start = m.group(1), k
        k += 1
    if name:
        out[name] = (start, k)
    return lines, out

fold_manifest = os.path.join(fold, "manifest.yaml")
fold_lines, fold_fams = families(fold_manifest)
bundle_lines, bundle_fams = families(os.path.join(bundle, "manifest.yaml"))
refreshed, out, at = [], [], 0
for name, (a, b) in sorted(fold_fams.items(), key=lambda kv: kv[1][0]):
    out += fold_lines[at:a]
    at = b
    if name in trained or name not in bundle_fams:
        out += fold_lines[a:b]
        continue
    block = bundle_lines[bundle_fams[name][0]:bundle_fams[name][1]]
    for line in block:  # files: [...] and net_files: [...], at any depth (fallback networks too)
        m = re.match(r"^\s*(?:net_)?files:\s*\[([^\]]*)\]\s*$", line)
        for f in (m.group(1).split(",") if m else []):
            if f.strip():
                shutil.copyfile(os.path.join(bundle, f.strip()), os.path.join(fold, f.strip()))
    out += block
    if block != fold_lines[a:b]:
        refreshed.append(name)
out += fold_lines[at:]
with open(fold_manifest + ".tmp", "w") as f:
    f.write("".join(out))
os.replace(fold_manifest + ".tmp", fold_manifest)
if refreshed:
    print(f"eval-llm-loo: {fold}: untrained families taken from {bundle}: {', '.join(refreshed)}", file=sys.stderr)
PY
}

# eval-llm-loo.sh EVAL_ONLY=1: one warning line on stderr when the fold's FAMILY was trained
# before the last commit to core/kernel.{h,cpp} (the bounds and the fit of the fitted roofline),
# or while those files have uncommitted changes: re-scoring then applies today's bounds to the
# fold's fitted roofline, which is exact only when the change left the bounds alone (a blend, a
# clamp); else retrain the fold. Silent otherwise, and where REPO is no git checkout.
warn_older_fit() {  # manifest family [repo]
  python3 - "$1" "$2" "${3:-.}" <<'PY'
import datetime, re, subprocess, sys
manifest, fam, repo = sys.argv[1:4]
trained, inside = None, False
with open(manifest) as f:
    for line in f:
        m = re.match(r"^  ([A-Za-z0-9_]+):\s*$", line)
        if m:
            inside = m.group(1) == fam
            continue
        if not line.startswith("    "):
            inside = False
        m = re.match(r"^    trained_at:\s*(\S+)\s*$", line) if inside else None
        if m:
            trained = m.group(1)
            break
if not trained:
    sys.exit(0)


def git(*args):
    try:
        r = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    except OSError:
        return None
    return r.stdout.strip() if r.returncode == 0 else None


paths = ["core/kernel.cpp", "core/kernel.h"]
changed, dirty = git("log", "-1", "--format=%cI", "--", *paths), git("status", "--porcelain", "--", *paths)
when = datetime.datetime.fromisoformat(trained.replace("Z", "+00:00"))
why = []
if changed and when < datetime.datetime.fromisoformat(changed):
    why.append(f"before the last commit to core/kernel.{{h,cpp}} ({changed})")
if dirty:
    why.append("and core/kernel.{h,cpp} have uncommitted changes")
if why:
    print(f"eval-llm-loo: warning: {fam} of {manifest} was trained at {trained}, {', '.join(why)}: "
          "re-scoring applies today's bounds to its fitted roofline (exact only where they did not "
          "change; else retrain the fold)", file=sys.stderr)
PY
}
