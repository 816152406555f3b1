"""Synthetic but learnable text: sequences of a fixed Markov chain over the vocabulary.

Each token has 4 likely successors (weights 0.55, 0.25, 0.12, 0.08), so the loss falls from
ln(vocab) towards the chain's entropy rate (1.13 nats). Sample g of the whole job is generated
from (seed, g) alone, so a step's data does not depend on the world size or on how the global
batch is split into replicas and micro-batches.
"""

import random


class MarkovData:
    BRANCH_WEIGHTS = (0.55, 0.25, 0.12, 0.08)

    def __init__(self, seed, vocab, seq_len):
        self.seed, self.vocab, self.seq_len = seed, vocab, seq_len
        rng = random.Random(seed)
        k = min(len(self.BRANCH_WEIGHTS), vocab)
        self.successors = [rng.sample(range(vocab), k) for _ in range(vocab)]
        cum, total = [], 0.0
        for w in self.BRANCH_WEIGHTS[:k]:
            total += w
            cum.append(total)
        self.cum_weights = cum

    def sample(self, g):
        rng = random.Random(self.seed * 1_000_003 * (1 << 40) + g)
        t = rng.randrange(self.vocab)
        tokens = [t]
        for _ in range(self.seq_len):
            t = rng.choices(self.successors[t], cum_weights=self.cum_weights)[0]
            tokens.append(t)
        return tokens

    def batch(self, first, count):
        """(inputs, targets), each [count, seq_len] token ids, of samples [first, first+count)."""
        import torch
        rows = [self.sample(first + i) for i in range(count)]
        data = torch.tensor(rows, dtype=torch.long)
        return data[:, :-1], data[:, 1:]
