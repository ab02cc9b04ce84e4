# SPDX-License-Identifier: MIT
"""What the two training examples share: starting the ranks (under torchrun or
torch.multiprocessing), choosing the communication of DistributedDataParallel
(gloo's own allreduce, or ina's hook with or without its sparsifier), timing
steps, gathering per-epoch figures over the ranks and writing the result file.

The models and data live in train_digits.py and train_lm.py; this file knows
nothing about them beyond the callables they pass in.
"""

import json
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# Where this file lives, and the repository (data/ is read from there).
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def add_common_args(p, epochs, lr, batch):
	"""The options both examples take; the defaults are each model's tuned ones."""
	p.add_argument("--comm", choices=("gloo", "ina"), default="gloo",
		       help="gradient allreduce: DDP's built-in gloo, or ina's hook")
	p.add_argument("--sparsify", choices=("off", "topk", "filter", "both"), default="off",
		       help="ina's sparsifier (with residuals), --comm ina only")
	p.add_argument("--density", type=float, default=0.1,
		       help="top-k: fraction of blocks sent per round (default 0.1)")
	p.add_argument("--switch", default=os.environ.get("INA_SWITCH"),
		       help="ADDR:PORT of the ina-switch (default $INA_SWITCH)")
	p.add_argument("--block-size", type=int, default=0,
		       help="ina's elements per block (0: the package's default)")
	p.add_argument("--ina", action="append", default=[], metavar="KEY=VALUE",
		       help="another ina_config field for the hook's context, e.g. lanes=32 or "
		       "rto_us=20000 (repeatable)")
	p.add_argument("--epochs", type=int, default=epochs)
	p.add_argument("--lr", type=float, default=lr)
	p.add_argument("--batch", type=int, default=batch, help="per rank")
	p.add_argument("--max-steps", type=int, default=0,
		       help="at most this many steps per epoch (0: the whole shard; a smoke test)")
	p.add_argument("--seed", type=int, default=1, help="initial weights and batch order")
	p.add_argument("--nproc", type=int, default=4,
		       help="ranks to spawn with torch.multiprocessing when not under torchrun")
	p.add_argument("--out", help="write the result as JSON to this file (rank 0)")
	p.add_argument("--quiet", action="store_true", help="no per-epoch lines")


def check_args(p, args):
	if args.comm == "gloo" and args.sparsify != "off":
		p.error("--sparsify needs --comm ina (gloo's allreduce is dense)")
	if args.comm == "ina" and not args.switch:
		p.error("--comm ina needs --switch ADDR:PORT or $INA_SWITCH")
	for kv in args.ina:
		if "=" not in kv or not kv.split("=", 1)[0]:
			p.error(f"--ina {kv!r}: expected KEY=VALUE")
	if not 0 < args.density <= 1:
		p.error("--density must be in (0, 1]")
	if args.epochs < 1 or args.batch < 1 or args.lr <= 0 or args.nproc < 1 or args.max_steps < 0:
		p.error("--epochs, --batch, --nproc must be >= 1, --max-steps >= 0 and --lr > 0")


def free_port():
	with socket.socket() as s:
		s.bind(("127.0.0.1", 0))
		return s.getsockname()[1]


def launch(args, body):
	"""Runs body(args, rank, world) on every rank: in this process when torchrun
	started it (RANK and WORLD_SIZE set), else in args.nproc processes started
	with torch.multiprocessing (fork) on 127.0.0.1."""
	if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
		_rank_main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args, body)
		return
	os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
	os.environ.setdefault("MASTER_PORT", str(free_port()))
	# fork: the children have torch imported already (a second each saved on
	# two cores); this process has run no torch operation, so no thread pool.
	mp.start_processes(_rank_main, args=(args.nproc, args, body), nprocs=args.nproc,
			   join=True, start_method="fork")


def _rank_main(rank, world, args, body):
	# Two cores shared by four ranks: one thread each, or they fight.
	torch.set_num_threads(1)
	dist.init_process_group("gloo", rank=rank, world_size=world)
	try:
		body(args, rank, world)
	finally:
		dist.destroy_process_group()


def make_comm(args, model):
	"""Wraps 'model' in DDP and registers ina's hook when asked; returns
	(ddp_model, state) where state is the hook's (None for gloo)."""
	ddp = torch.nn.parallel.DistributedDataParallel(model)
	if args.comm == "gloo":
		return ddp, None
	try:
		import ina.torch as it
	except ImportError as e:
		raise SystemExit(f"--comm ina: the ina package cannot be imported ({e}): install "
				 "it, or PYTHONPATH=BUILD/python for a build tree's") from None

	kw = {}
	if args.sparsify != "off":
		kw["sparsify"] = {"mode": args.sparsify, "density": args.density}
	if args.block_size:
		kw["block_size"] = args.block_size
	for kv in args.ina:
		k, v = kv.split("=", 1)
		kw[k] = int(v) if v.isdigit() else v
	state = it.HookState(switch=args.switch, **kw)
	ddp.register_comm_hook(state, it.allreduce_hook)
	return ddp, state


def shard_order(n, rank, world, seed, epoch):
	"""This rank's sample indices for an epoch: the round-robin shard (i mod
	world == rank), in an order drawn from (seed, epoch, rank)."""
	idx = torch.arange(rank, n, world)
	g = torch.Generator().manual_seed(seed * 1000003 + epoch * 1009 + rank)
	return idx[torch.randperm(len(idx), generator=g)]


def shard_batches(args, x, y, rank, world, steps):
	"""batches(epoch) for run_training: this rank's 'steps' batches of
	(x, y) rows of an epoch, from shard_order."""
	def batches(epoch):
		order = shard_order(len(x), rank, world, args.seed, epoch)
		for s in range(steps):
			i = order[s * args.batch:(s + 1) * args.batch]
			yield x[i], y[i]
	return batches


def steps_per_epoch(args, n, world):
	"""Equal on every rank (DDP needs the same number of backward passes): the
	smallest shard's full batches, or --max-steps if fewer."""
	steps = max(1, (n // world) // args.batch)
	return min(steps, args.max_steps) if args.max_steps > 0 else steps


def mean_over_ranks(values):
	"""The mean of each float over all ranks, through the gloo group (not the
	path being compared: evaluation only)."""
	t = torch.tensor(values, dtype=torch.float64)
	dist.all_reduce(t)
	return (t / dist.get_world_size()).tolist()


class Recorder:
	"""Step times and per-epoch figures of one rank; rank 0 prints and writes."""

	def __init__(self, args, rank, world, name, n_params):
		self.args, self.rank, self.world, self.name = args, rank, world, name
		self.n_params = n_params
		self.step_ms = []
		self.step_loss = []  # this rank's batch losses, in order
		self.epochs = []
		self.t0 = time.perf_counter()

	def step(self, ms, loss):
		self.step_ms.append(ms)
		self.step_loss.append(loss)

	def epoch(self, epoch, train_loss, metrics):
		row = {"epoch": epoch, "train_loss": train_loss, **metrics}
		self.epochs.append(row)
		if self.rank == 0 and not self.args.quiet:
			extra = "  ".join(f"{k} {v:.4f}" for k, v in metrics.items())
			print(f"[{self.label()}] epoch {epoch + 1}/{self.args.epochs}  "
			      f"train_loss {train_loss:.4f}  {extra}", flush=True)

	def label(self):
		a = self.args
		if a.comm == "gloo":
			return f"{self.name} gloo"
		if a.sparsify == "off":
			return f"{self.name} ina"
		if a.sparsify == "topk":
			return f"{self.name} ina topk {a.density:g}"
		return f"{self.name} ina {a.sparsify}"

	def finish(self, state):
		"""Gathers the ranks' step-time medians and ina's counters, then rank
		0 prints the summary and writes the JSON file."""
		a = self.args
		steps = len(self.step_ms)
		# Step 0 carries DDP's first bucket set-up and ina's job admission:
		# the median is over the steps after it.
		med = statistics.median(self.step_ms[1:] or self.step_ms)
		stats = state.stats() if state is not None else {}
		wire = float(stats.get("bytes_sent", 0) + stats.get("bytes_received", 0))
		per_rank = mean_over_ranks([med, wire])  # means over ranks
		res = {
			"model": self.name, "comm": a.comm,
			"sparsify": None if a.sparsify == "off" else {"mode": a.sparsify,
								       "density": a.density},
			"label": self.label(), "world": self.world, "seed": a.seed,
			"epochs": a.epochs, "batch_per_rank": a.batch, "lr": a.lr,
			"steps": steps, "params": self.n_params,
			"grad_bytes_per_step": 4 * self.n_params,
			"per_epoch": self.epochs,
			"step_loss_rank0": self.step_loss,
			"final": self.epochs[-1],
			"ms_per_step": med,
			"ms_per_step_mean_over_ranks": per_rank[0],
			"wall_s": time.perf_counter() - self.t0,
		}
		if state is not None:
			res["bytes_per_step"] = wire / steps
			res["bytes_per_step_mean_over_ranks"] = per_rank[1] / steps
			res["ina_stats_rank0"] = {k: v for k, v in stats.items()
						  if isinstance(v, (int, float))}
		if self.rank != 0:
			return res
		f = res["final"]
		figs = "  ".join(f"{k} {v:.4f}" for k, v in f.items() if k != "epoch")
		line = f"[{self.label()}] final: {figs}  ms/step {med:.2f} (median of {steps - 1})"
		if state is not None:
			line += f"  bytes/step {res['bytes_per_step']:.0f} (rank 0, sent+received)"
		print(line, flush=True)
		if a.out:
			with open(a.out, "w") as fp:
				json.dump(res, fp, indent=1)
		return res


def run_training(args, rank, world, rec, model, steps, batches, train_step, evaluate):
	"""The loop both examples share: SGD with momentum 0.9 and a learning rate
	that decays from args.lr to 0 along a cosine over the run (the last epochs
	settle rather than jitter, so that two runs compare). batches(epoch)
	yields this rank's 'steps' batches of an epoch; train_step(ddp, batch)
	returns the batch's loss;
	evaluate(model) returns a dict of held-out figures (the same on every rank:
	the parameters are)."""
	ddp, state = make_comm(args, model)
	opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
	sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * steps)
	try:
		for epoch in range(args.epochs):
			ddp.train()
			losses = []
			for b in batches(epoch):
				t = time.perf_counter()
				opt.zero_grad(set_to_none=True)
				loss = train_step(ddp, b)
				loss.backward()
				opt.step()
				sched.step()
				ms = (time.perf_counter() - t) * 1e3
				losses.append(loss.item())
				rec.step(ms, losses[-1])
			train_loss = mean_over_ranks([sum(losses) / len(losses)])[0]
			ddp.eval()
			with torch.no_grad():
				metrics = evaluate(model)
			rec.epoch(epoch, train_loss, metrics)
		return rec.finish(state)
	finally:
		if state is not None:
			state.close()
