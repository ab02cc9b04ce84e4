#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A small convolutional network on the digits data (data/digits.csv.gz), trained
by data-parallel ranks under DistributedDataParallel, its gradients summed by
gloo (DDP's own allreduce) or by ina (the hook of ina.torch), with or without
ina's sparsifier. Same split as ina-train: the last 20% (360 rows) after a
splitmix64 Fisher-Yates shuffle with seed 0 are held out; the training rows
are dealt to the ranks round-robin.

  torchrun --standalone --nproc-per-node 4 examples/train_digits.py --comm gloo
  INA_SWITCH=127.0.0.1:9150 /usr/bin/python3 examples/train_digits.py --comm ina \\
      --sparsify topk --density 0.1 --out digits.json
"""

import argparse
import gzip
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as dc  # noqa: E402

DATA = os.path.join(dc.REPO, "data", "digits.csv.gz")
M64 = (1 << 64) - 1


def splitmix64(state):
	state = (state + 0x9E3779B97F4A7C15) & M64
	z = state
	z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
	z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
	return state, z ^ (z >> 31)


def split_indices(n, seed=0, test_frac=0.2):
	"""ina-train's data_split(): Fisher-Yates with splitmix64, the last
	ceil(n * test_frac) rows held out."""
	idx = list(range(n))
	st = seed
	for i in range(n, 1, -1):
		st, r = splitmix64(st)
		j = r % i
		idx[i - 1], idx[j] = idx[j], idx[i - 1]
	n_test = math.ceil(n * test_frac)
	return idx[:n - n_test], idx[n - n_test:]


def load(path):
	rows = []
	with gzip.open(path, "rt") as f:
		for ln, line in enumerate(f, 1):
			v = line.strip().split(",")
			if len(v) != 65:
				raise SystemExit(f"{path}:{ln}: {len(v)} fields, expected 65")
			rows.append([int(x) for x in v])
	t = torch.tensor(rows, dtype=torch.float32)
	x = (t[:, :64] / 16.0).reshape(-1, 1, 8, 8)
	y = t[:, 64].long()
	tr, te = split_indices(len(rows))
	return x[tr], y[tr], x[te], y[te]


class Net(nn.Module):
	"""conv 1->16, conv 16->32, max-pool, fc 512->128, fc 128->10: the network
	of data/grads_cnn_digits_3it.npy (71,754 parameters)."""

	def __init__(self):
		super().__init__()
		self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
		self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
		self.fc1 = nn.Linear(512, 128)
		self.fc2 = nn.Linear(128, 10)

	def forward(self, x):
		x = F.relu(self.conv1(x))
		x = F.max_pool2d(F.relu(self.conv2(x)), 2)
		return self.fc2(F.relu(self.fc1(x.flatten(1))))


def body(args, rank, world):
	xtr, ytr, xte, yte = load(args.data)
	torch.manual_seed(args.seed)  # the same initial weights on every rank and mode
	model = Net()
	n_params = sum(p.numel() for p in model.parameters())
	rec = dc.Recorder(args, rank, world, "digits", n_params)
	steps = dc.steps_per_epoch(args, len(xtr), world)

	batches = dc.shard_batches(args, xtr, ytr, rank, world, steps)

	def train_step(ddp, b):
		return F.cross_entropy(ddp(b[0]), b[1])

	def evaluate(m):
		out = m(xte)
		return {"test_loss": F.cross_entropy(out, yte).item(),
			"test_acc": (out.argmax(1) == yte).float().mean().item() * 100}

	if rank == 0 and not args.quiet:
		print(f"[{rec.label()}] {world} ranks, {len(xtr)} training rows "
		      f"({steps} steps of {args.batch} per rank per epoch), {len(xte)} held out, "
		      f"{n_params} parameters", flush=True)
	dc.run_training(args, rank, world, rec, model, steps, batches, train_step, evaluate)


def main():
	p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
				    formatter_class=argparse.RawDescriptionHelpFormatter)
	dc.add_common_args(p, epochs=20, lr=0.1, batch=32)
	p.add_argument("--data", default=DATA, help="digits CSV (gzip)")
	args = p.parse_args()
	dc.check_args(p, args)
	if not os.path.exists(args.data):
		p.error(f"{args.data}: no such file")
	dc.launch(args, body)


if __name__ == "__main__":
	main()
