#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Trains each example model (train_digits.py, train_lm.py) in one run three
ways with the same seeds: through DDP's built-in gloo allreduce, through ina's
hook dense, and through ina's hook with its top-k sparsifier; then prints a
table per model (final loss and accuracy, median ms per step and the ratio to
gloo, bytes on the wire per step through ina) and draws the loss curves of the
three in one PNG per model (matplotlib).

It starts its own ina-switch on 127.0.0.1 (a free UDP port) from the build
tree, and runs every training with torchrun --standalone --nproc_per_node 4
(--launcher mp, the default of --quick: torch.multiprocessing instead). The ina package is imported
from BUILD/python (the build tree's copy) unless installed.

Exit status: 0 when every run finished and, outside --quick, ina dense reached
gloo's test accuracy within --tolerance points; 1 otherwise; 2 for bad usage;
77 when torch cannot be imported (the ctest skip code; 1 with
INA_REQUIRE_TORCH=1).

  examples/compare.py --build build            # the full comparison (a few minutes)
  examples/compare.py --build build --quick    # a smoke test (under a minute)
"""

import argparse
import json
import math
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PY = sys.executable  # the ranks run under the interpreter that runs this

MODELS = {
	# name: (script, full-run options, --quick options)
	"digits": ("train_digits.py", [], ["--epochs", "2", "--max-steps", "5"]),
	"lm": ("train_lm.py", [], ["--epochs", "1", "--max-steps", "10"]),
}
MODES = {
	"gloo": ["--comm", "gloo"],
	"ina": ["--comm", "ina"],
	"ina-topk": ["--comm", "ina", "--sparsify", "topk"],
}


def parse():
	p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
				    formatter_class=argparse.RawDescriptionHelpFormatter)
	p.add_argument("--build", default=os.path.join(REPO, "build"),
		       help="build tree: its switch_sim/ina-switch and python/ (default REPO/build)")
	p.add_argument("--switch-bin", help="the ina-switch to start (default BUILD/switch_sim/"
		       "ina-switch, else ina-switch on PATH)")
	p.add_argument("--out", help="directory for the JSON results, logs and PNGs "
		       "(default BUILD/examples-out)")
	p.add_argument("--models", default="digits,lm", help="comma-separated: digits, lm")
	p.add_argument("--modes", default="gloo,ina,ina-topk",
		       help="comma-separated: gloo, ina, ina-topk")
	p.add_argument("--density", type=float, default=0.1, help="top-k density (ina-topk)")
	p.add_argument("--nproc", type=int, default=4, help="ranks")
	p.add_argument("--ina", action="append", default=[], metavar="KEY=VALUE",
		       help="an ina_config field for the ina runs' contexts (repeatable)")
	p.add_argument("--seed", type=int, default=1)
	p.add_argument("--launcher", choices=("torchrun", "mp"),
		       help="torchrun (default), or torch.multiprocessing (default with --quick: "
		       "torch is imported once per run, not five times)")
	p.add_argument("--quick", action="store_true",
		       help="a few steps of each: a smoke test (the ctest)")
	p.add_argument("--tolerance", type=float, default=0.5,
		       help="points of test accuracy ina dense may miss gloo's by (default 0.5)")
	p.add_argument("--timeout", type=float, default=600, help="seconds per training run")
	p.add_argument("--no-plot", action="store_true", help="skip the PNGs")
	p.add_argument("--report-only", action="store_true",
		       help="train nothing: the tables and PNGs of the results already in --out")
	a = p.parse_args()
	a.models = [m for m in a.models.split(",") if m]
	a.modes = [m for m in a.modes.split(",") if m]
	for m in a.models:
		if m not in MODELS:
			p.error(f"--models: unknown model {m!r} (digits, lm)")
	for m in a.modes:
		if m not in MODES:
			p.error(f"--modes: unknown mode {m!r} (gloo, ina, ina-topk)")
	if not a.models or not a.modes:
		p.error("--models and --modes need at least one each")
	if not 0 < a.density <= 1 or a.nproc < 1:
		p.error("--density must be in (0, 1] and --nproc >= 1")
	if a.launcher == "torchrun" and a.nproc > 9:
		p.error("--launcher torchrun takes at most 9 ranks here (use --launcher mp)")
	if a.launcher is None:
		a.launcher = "mp" if a.quick else "torchrun"
	a.build = os.path.abspath(a.build)
	a.out = os.path.abspath(a.out or os.path.join(a.build, "examples-out"))
	return a


def free_udp_port():
	with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
		s.bind(("127.0.0.1", 0))
		return s.getsockname()[1]


def find_switch(a):
	cand = a.switch_bin or os.path.join(a.build, "switch_sim", "ina-switch")
	if os.access(cand, os.X_OK):
		return cand
	if not a.switch_bin:
		found = shutil.which("ina-switch")
		if found:
			return found
	sys.exit(f"compare: no ina-switch at {cand} (build it, or give --switch-bin)")


def start_switch(a, log):
	"""An ina-switch on 127.0.0.1 at a free port; (process, "ADDR:PORT")."""
	sw = find_switch(a)
	for _ in range(5):
		addr = f"127.0.0.1:{free_udp_port()}"
		proc = subprocess.Popen([sw, "--listen", addr, "--log-level", "warn"],
					stdout=log, stderr=subprocess.STDOUT)
		time.sleep(0.3)  # bound, or gone (the port taken meanwhile: try another)
		if proc.poll() is None:
			return proc, addr
	sys.exit(f"compare: {sw} did not start (see {log.name})")


def stop(proc):
	if proc.poll() is None:
		proc.send_signal(signal.SIGINT)
		try:
			proc.wait(timeout=5)
		except subprocess.TimeoutExpired:
			proc.kill()
			proc.wait()


def env_for(a, switch):
	env = dict(os.environ)
	pyd = os.path.join(a.build, "python")
	if os.path.isdir(pyd):
		env["PYTHONPATH"] = pyd + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
					   else "")
	if switch:
		env["INA_SWITCH"] = switch
	# One secret for the whole comparison, made here, passed by environment.
	env.setdefault("INA_JOB_TOKEN", secrets.token_hex(16))
	env["OMP_NUM_THREADS"] = "1"
	return env


def run_one(a, env, model, mode):
	script, full, quick = MODELS[model]
	tag = f"{model}-{mode}"
	out = os.path.join(a.out, tag + ".json")
	if os.path.exists(out):
		os.remove(out)
	args = [os.path.join(HERE, script), "--seed", str(a.seed), "--out", out]
	args += MODES[mode] + (quick if a.quick else full)
	if mode == "ina-topk":
		args += ["--density", str(a.density)]
	if mode != "gloo":
		for kv in a.ina:
			args += ["--ina", kv]
	if a.launcher == "torchrun":
		# --redirects/--tee as a map of rank 9, which does not exist (at
		# most 9 ranks): Debian's torch 1.13 under Python 3.11 cannot parse
		# its own default "0" (enum.IntFlag no longer lists a zero member);
		# this means the same, no redirection.
		cmd = [PY, "-m", "torch.distributed.run", "--standalone",
		       "--nproc_per_node", str(a.nproc), "--redirects", "9:1", "--tee", "9:1"] + args
	else:
		cmd = [PY] + args + ["--nproc", str(a.nproc)]
	log_path = os.path.join(a.out, tag + ".log")
	t0 = time.monotonic()
	load0 = os.getloadavg()[0]
	ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
	with open(log_path, "w") as log:
		log.write(" ".join(cmd) + "\n")
		log.flush()
		try:
			rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
					    timeout=a.timeout, cwd=REPO).returncode
		except subprocess.TimeoutExpired:
			rc = "timeout"
	wall = time.monotonic() - t0
	ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
	cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
	res = None
	if rc == 0 and os.path.exists(out):
		with open(out) as f:
			res = json.load(f)
		res["run_wall_s"] = wall
		res["run_cpu_s"] = cpu  # of the launcher and ranks, not the switch
		# The machine's 1-minute load average before and after: step times
		# only compare between runs that saw a like load.
		res["loadavg"] = [load0, os.getloadavg()[0]]
	fin = res["final"] if res else {}
	print(f"  {tag:16s} {'ok' if res else 'FAILED (' + str(rc) + ')':10s} {wall:6.1f} s  "
	      f"(cpu {cpu:5.1f} s, load {load0:4.1f})  "
	      + (f"test_acc {fin['test_acc']:.2f}  test_loss {fin['test_loss']:.4f}" if res else
		 f"see {log_path}"), flush=True)
	if not res:
		with open(log_path) as f:
			tail = f.read().splitlines()[-15:]
		print("\n".join("    | " + ln for ln in tail), flush=True)
	return res


def fmt_bytes(b):
	for unit, div in (("MB", 1e6), ("kB", 1e3)):
		if b >= div:
			return f"{b / div:.1f} {unit}"
	return f"{b:.0f} B"


def table(model, runs):
	"""A Markdown table of one model's runs."""
	gloo = runs.get("gloo")
	lm = model == "lm"
	head = ["run", "final train loss", "test loss"] + (["perplexity"] if lm else []) + \
		["test accuracy %", "ms/step (median)", "ina/gloo", "bytes on the wire/step"]
	rows = []
	for mode, r in runs.items():
		if r is None:
			rows.append([mode, "failed"] + [""] * (len(head) - 2))
			continue
		f = r["final"]
		ratio = f"{r['ms_per_step'] / gloo['ms_per_step']:.2f}" if gloo and mode != "gloo" else ""
		wire = ""
		if "bytes_per_step" in r:
			st = r.get("ina_stats_rank0", {})
			rx = ""
			if st.get("packets_sent"):
				rx = f", {100 * st.get('retransmits', 0) / st['packets_sent']:.0f}% resent"
			wire = (f"{fmt_bytes(r['bytes_per_step'])} "
				f"({r['bytes_per_step'] / r['grad_bytes_per_step']:.2f}x the gradient{rx})")
		rows.append([r["label"].split(" ", 1)[1], f"{f['train_loss']:.4f}", f"{f['test_loss']:.4f}"]
			    + ([f"{f['perplexity']:.2f}"] if lm else [])
			    + [f"{f['test_acc']:.2f}", f"{r['ms_per_step']:.2f}", ratio, wire])
	lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
	lines += ["| " + " | ".join(r) + " |" for r in rows]
	return "\n".join(lines)


def plot(a, model, runs):
	try:
		import matplotlib
		matplotlib.use("Agg")
		import matplotlib.pyplot as plt
	except ImportError:
		print("compare: matplotlib is missing (apt-get install python3-matplotlib): no PNG")
		return None
	fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
	style = {"gloo": ("k", "-"), "ina": ("tab:blue", "--"), "ina-topk": ("tab:orange", ":")}
	k = 1
	seen = []
	for mode, r in runs.items():
		if r is None:
			continue
		color, ls = style[mode]
		sl = r["step_loss_rank0"]
		k = max(1, min(20, len(sl) // 20))  # moving average over k steps
		sm = [sum(sl[max(0, i - k + 1):i + 1]) / (i + 1 - max(0, i - k + 1)) for i in range(len(sl))]
		ax1.plot(range(1, len(sm) + 1), sm, color=color, ls=ls, lw=1.4, label=r["label"])
		seen += sm
		ep = r["per_epoch"]
		spe = len(sl) / len(ep)
		ax2.plot([(e["epoch"] + 1) * spe for e in ep], [e["test_loss"] for e in ep], color=color,
			 ls=ls, marker="o", ms=3, lw=1.4, label=r["label"])
	ax1.set(title=f"{model}: training loss (rank 0, moving average of {k} steps)",
		xlabel="step", ylabel="cross-entropy")
	if seen and min(seen) > 0 and max(seen) / min(seen) > 20:  # digits: 2.3 down to 0.00x
		ax1.set_yscale("log")
	ax2.set(title=f"{model}: held-out loss per epoch", xlabel="step", ylabel="cross-entropy")
	for ax in (ax1, ax2):
		ax.grid(alpha=0.3)
		ax.legend()
	fig.suptitle(f"{model}, {a.nproc} ranks, seed {a.seed}: gloo and ina side by side")
	fig.tight_layout()
	path = os.path.join(a.out, f"{model}-loss.png")
	fig.savefig(path, dpi=90)
	plt.close(fig)
	return path


def check(a, model, runs):
	"""Problems with one model's runs (empty: good)."""
	bad = []
	for mode, r in runs.items():
		if r is None:
			bad.append(f"{model} {mode}: the run failed")
			continue
		if not all(math.isfinite(e["train_loss"]) for e in r["per_epoch"]):
			bad.append(f"{model} {mode}: a loss is not finite")
		if mode != "gloo" and not r.get("bytes_per_step", 0) > 0:
			bad.append(f"{model} {mode}: no bytes through ina")
	g, i = runs.get("gloo"), runs.get("ina")
	if g and i:
		if a.quick:
			# A few steps: dense ina sums what gloo sums, up to rounding
			# (the same to 4 digits in every run seen; a hook that summed
			# without averaging, 4x the step, moves it by 1.8% (digits) and
			# 4.5% (lm) in these steps).
			lg, li = g["final"]["train_loss"], i["final"]["train_loss"]
			if abs(lg - li) > 1e-3 * abs(lg):
				bad.append(f"{model}: ina's training loss {li:.6f} is not gloo's {lg:.6f} "
					   "within 0.1%")
		else:
			d = abs(g["final"]["test_acc"] - i["final"]["test_acc"])
			if d > a.tolerance:
				bad.append(f"{model}: ina's test accuracy is {d:.2f} points from gloo's "
					   f"(more than {a.tolerance})")
	return bad


def main():
	a = parse()
	try:
		subprocess.run([PY, "-c", "import torch"], check=True, capture_output=True)
	except (OSError, subprocess.CalledProcessError):
		if os.environ.get("INA_REQUIRE_TORCH") == "1":
			sys.exit(f"compare: torch cannot be imported by {PY}, and INA_REQUIRE_TORCH=1")
		print(f"compare: torch cannot be imported by {PY} (apt-get install python3-torch): "
		      "skipped")
		sys.exit(77)
	os.makedirs(a.out, exist_ok=True)
	if a.report_only:
		sys.exit(report(a, load_results(a), time.monotonic()))
	need_ina = any(m != "gloo" for m in a.modes)
	env = env_for(a, None)
	if need_ina:
		r = subprocess.run([PY, "-c", "import ina.torch"], env=env, capture_output=True,
				   text=True)
		if r.returncode != 0:
			err = (r.stderr.strip().splitlines() or ["?"])[-1]
			sys.exit(f"compare: the ina package cannot be imported ({err}); build it "
				 f"({a.build}/python) or install it, or run --modes gloo")
	switch = log = None
	t0 = time.monotonic()
	results = {}
	try:
		if need_ina:
			log = open(os.path.join(a.out, "ina-switch.log"), "w")
			switch, addr = start_switch(a, log)
			env = env_for(a, addr)
			print(f"compare: ina-switch on {addr} (pid {switch.pid}); {a.nproc} ranks per run "
			      f"with {a.launcher}; results in {a.out}", flush=True)
		for model in a.models:
			results[model] = {}
			for mode in a.modes:
				results[model][mode] = run_one(a, env, model, mode)
				if switch is not None and switch.poll() is not None:
					sys.exit(f"compare: the switch exited ({switch.returncode}): "
						 f"see {log.name}")
	finally:
		if switch is not None:
			stop(switch)
		if log is not None:
			log.close()
	sys.exit(report(a, results, t0))


def load_results(a):
	results = {}
	for model in a.models:
		results[model] = {}
		for mode in a.modes:
			path = os.path.join(a.out, f"{model}-{mode}.json")
			try:
				with open(path) as f:
					results[model][mode] = json.load(f)
			except (OSError, ValueError) as e:
				print(f"compare: {path}: {e}")
				results[model][mode] = None
	return results


def report(a, results, t0):
	"""Prints the tables, draws the PNGs, writes compare.json; the exit
	status."""
	problems = []
	summary = {}
	for model, runs in results.items():
		print(f"\n### {model}\n")
		print(table(model, runs))
		png = None if a.no_plot else plot(a, model, runs)
		if png:
			print(f"\nloss curves: {png}")
		problems += check(a, model, runs)
		summary[model] = runs
	if not a.report_only:  # else compare.json keeps the run's wall times and loads
		with open(os.path.join(a.out, "compare.json"), "w") as f:
			json.dump({"quick": a.quick, "nproc": a.nproc, "seed": a.seed,
				   "launcher": a.launcher, "results": summary}, f, indent=1)
	print(f"\ncompare: {time.monotonic() - t0:.0f} s in all")
	for p in problems:
		print(f"compare: {p}")
	return 1 if problems else 0


if __name__ == "__main__":
	main()
