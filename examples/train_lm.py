#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A word-level language model (next-word prediction) trained by data-parallel
ranks under DistributedDataParallel, its gradients summed by gloo (DDP's own
allreduce) or by ina (the hook of ina.torch), with or without ina's sparsifier.

The model: an embedding table (nn.Embedding, sparse=False, so DDP allreduces
its dense gradient, whose rows are zero for every word the step's batches do
not hold: naturally sparse blocks), the embeddings of the previous --context
words concatenated, one tanh hidden layer, a softmax over the vocabulary
(Bengio et al.'s neural probabilistic language model).

The corpus: the licence texts Debian's base-files package ships in
/usr/share/common-licenses (present on every Debian machine; each is the
licence of itself and permits verbatim copies), the distinct files in name
order, lowercased, split into words and punctuation marks. The last 10% of
the tokens are held out; the vocabulary is the training part's most frequent
--vocab - 1 tokens and <unk>.

  torchrun --standalone --nproc-per-node 4 examples/train_lm.py --comm gloo
  INA_SWITCH=127.0.0.1:9150 /usr/bin/python3 examples/train_lm.py --comm ina --out lm.json
"""

import argparse
import collections
import math
import os
import re
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as dc  # noqa: E402

CORPUS = "/usr/share/common-licenses"
TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")


def read_corpus(path):
	"""Tokens of a file, or of every regular file of a directory (symbolic
	links skipped: base-files links GPL to GPL-3 and so on), in name order."""
	if os.path.isdir(path):
		files = sorted(os.path.join(path, f) for f in os.listdir(path)
			       if not os.path.islink(os.path.join(path, f))
			       and os.path.isfile(os.path.join(path, f)))
	else:
		files = [path]
	toks = []
	for f in files:
		with open(f, encoding="utf-8", errors="replace") as fp:
			toks += TOKEN.findall(fp.read().lower())
	return toks, files


def encode(path, vocab_size, held_out=0.1):
	toks, files = read_corpus(path)
	cut = int(len(toks) * (1 - held_out))
	if cut < 1000 or len(toks) - cut < 100:
		raise SystemExit(f"{path}: {len(toks)} tokens, too few for a language model")
	words = ["<unk>"] + [w for w, _ in collections.Counter(toks[:cut]).most_common(vocab_size - 1)]
	ids = {w: i for i, w in enumerate(words)}
	t = torch.tensor([ids.get(w, 0) for w in toks], dtype=torch.long)
	return t[:cut], t[cut:], words, files


def windows(t, n):
	"""(contexts, targets): every position with n previous tokens."""
	ctx = torch.stack([t[i:len(t) - n + i] for i in range(n)], 1)
	return ctx, t[n:]


class LM(nn.Module):
	def __init__(self, vocab, dim, context, hidden):
		super().__init__()
		self.emb = nn.Embedding(vocab, dim)  # sparse=False: DDP reduces it dense
		self.hid = nn.Linear(context * dim, hidden)
		self.out = nn.Linear(hidden, vocab)

	def forward(self, ctx):
		return self.out(torch.tanh(self.hid(self.emb(ctx).flatten(1))))


def body(args, rank, world):
	train, test, words, files = encode(args.corpus, args.vocab)
	xtr, ytr = windows(train, args.context)
	xte, yte = windows(test, args.context)
	torch.manual_seed(args.seed)  # the same initial weights on every rank and mode
	model = LM(len(words), args.dim, args.context, args.hidden)
	n_params = sum(p.numel() for p in model.parameters())
	rec = dc.Recorder(args, rank, world, "lm", n_params)
	steps = dc.steps_per_epoch(args, len(xtr), world)

	batches = dc.shard_batches(args, xtr, ytr, rank, world, steps)

	def train_step(ddp, b):
		return F.cross_entropy(ddp(b[0]), b[1])

	def evaluate(m):
		out = m(xte)
		loss = F.cross_entropy(out, yte).item()
		return {"test_loss": loss, "perplexity": math.exp(loss),
			"test_acc": (out.argmax(1) == yte).float().mean().item() * 100}

	if rank == 0 and not args.quiet:
		print(f"[{rec.label()}] {world} ranks, {len(files)} files of {args.corpus}: "
		      f"{len(train)} training tokens ({steps} steps of {args.batch} per rank per "
		      f"epoch), {len(test)} held out, vocabulary {len(words)}, {n_params} parameters "
		      f"({model.emb.weight.numel()} in the embedding)", flush=True)
	dc.run_training(args, rank, world, rec, model, steps, batches, train_step, evaluate)


def main():
	p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
				    formatter_class=argparse.RawDescriptionHelpFormatter)
	dc.add_common_args(p, epochs=5, lr=0.2, batch=128)
	p.add_argument("--corpus", default=CORPUS, help="a text file or a directory of them")
	p.add_argument("--vocab", type=int, default=1000, help="words kept, <unk> included")
	p.add_argument("--context", type=int, default=4, help="previous words seen")
	p.add_argument("--dim", type=int, default=32, help="embedding width")
	p.add_argument("--hidden", type=int, default=64)
	args = p.parse_args()
	dc.check_args(p, args)
	if not os.path.exists(args.corpus):
		p.error(f"{args.corpus}: no such file or directory")
	if args.vocab < 2 or args.context < 1 or args.dim < 1 or args.hidden < 1:
		p.error("--vocab must be >= 2 and --context, --dim, --hidden >= 1")
	dc.launch(args, body)


if __name__ == "__main__":
	main()
