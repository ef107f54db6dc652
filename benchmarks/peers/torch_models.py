"""Plain PyTorch peers: a nanoGPT-style GPT-2 and `torch.nn.Transformer` base.

What a PyTorch user writes by hand: `torch.compile`, SDPA (flash) attention,
bf16 autocast, fused AdamW/Adam, logits cast to float32 for the loss.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class GPTBlock(nn.Module):
    """Pre-LN block: causal SDPA attention with a fused QKV projection, GELU MLP."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.fc, self.out = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        batch, length, d_model = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(d_model, dim=2)
        # (batch, heads, T, d_head)
        q, k, v = (t.view(batch, length, self.num_heads, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(batch, length, d_model))
        return x + self.out(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    """GPT-2 with tied input/output embeddings; `forward` returns the loss."""

    def __init__(self, vocab, num_layers, d_model, num_heads, max_length):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d_model), nn.Embedding(max_length, d_model)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)

    def forward(self, ids, labels):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.T  # (batch, T, vocab)
        return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


class Seq2Seq(nn.Module):
    """`torch.nn.Transformer` (post-LN, ReLU) with sinusoids and a three-way tied embedding."""

    def __init__(self, vocab, num_layers, d_model, num_heads, d_ff, dropout):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab, d_model)
        self.transformer = nn.Transformer(
            d_model, num_heads, num_layers, num_layers, d_ff, dropout=dropout, batch_first=True
        )
        position = torch.arange(4096)[:, None]
        rates = 10000 ** (-torch.arange(0, d_model, 2) / d_model)
        table = torch.zeros(4096, d_model)
        table[:, 0::2], table[:, 1::2] = torch.sin(position * rates), torch.cos(position * rates)
        self.register_buffer("positions", table)

    def embed(self, ids):
        return self.embedding(ids) * math.sqrt(self.d_model) + self.positions[: ids.shape[1]]

    def forward(self, source, target, labels):
        causal = nn.Transformer.generate_square_subsequent_mask(
            target.shape[1], device=target.device
        )
        hidden = self.transformer(
            self.embed(source), self.embed(target), tgt_mask=causal, tgt_is_causal=True
        )
        logits = hidden @ self.embedding.weight.T  # (batch, T, vocab)
        return F.cross_entropy(
            logits.float().flatten(0, 1), labels.flatten(), label_smoothing=0.1
        )


def make_step(workload, batches, batch, compile_model, dropout, bf16=True, seed=0):
    """`(run(first, steps) -> last loss, parameter count)`: training steps on fresh batches;
    `run.loss(index)` is batch `index`'s loss in eval mode, without a step.

    Args:
        workload: `"gpt2"` or `"transformer"` shape dict from `train_throughput`.
        batches: the host (NumPy) arrays that the Keras runners also feed to `fit`:
            `{"ids", "labels"}` for GPT-2, `{"source", "target", "labels"}` for the
            Transformer, each `(steps * batch, length)`, batch after batch.
        batch: rows per step.
        compile_model: whether to `torch.compile` the model.
        dropout: residual dropout rate (GPT-2 only; the Transformer uses 0.1).
        bf16: whether the steps run under bf16 autocast.
    """
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(seed)
    first_array = next(iter(batches.values()))
    length = first_array.shape[1]
    if workload["family"] == "gpt2":
        if dropout:
            raise ValueError("the plain PyTorch GPT-2 peer runs without dropout")
        model = GPT(workload["vocab"], workload["layers"], workload["d_model"],
                    workload["heads"], max(length, workload["max_length"]))
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=device == "cuda")
        names = ("ids", "labels")
    else:
        model = Seq2Seq(workload["vocab"], workload["layers"], workload["d_model"],
                        workload["heads"], workload["d_ff"], dropout=0.1)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9,
                                     fused=device == "cuda")
        names = ("source", "target", "labels")
    model = model.to(device)
    count = sum(p.numel() for p in model.parameters())
    forward = torch.compile(model) if compile_model else model
    # Pinned host copies, moved batch by batch as a DataLoader with pin_memory would:
    # the same host-to-device traffic as Keras' fit on NumPy arrays.
    host = [torch.from_numpy(batches[name]).long() for name in names]  # torch wants int64 labels
    if device == "cuda":
        host = [h.pin_memory() for h in host]

    def step(index):
        rows = slice(index * batch, (index + 1) * batch)
        arguments = [h[rows].to(device, non_blocking=True) for h in host]
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            loss = forward(*arguments)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    def run(first, steps):
        """Trains on batches `first .. first + steps - 1`; the last loss."""
        for index in range(first, first + steps):
            loss = step(index)
        return float(loss.item())  # waits for the device

    def loss_of(index):
        """Batch `index`'s loss in eval mode (no dropout), without a step."""
        rows = slice(index * batch, (index + 1) * batch)
        model.eval()  # the uncompiled module: its weights, no recompilation for eval mode
        with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            loss = model(*[h[rows].to(device) for h in host])
        model.train()
        return float(loss.item())

    run.loss = loss_of  # run.loss(index): what the benchmark checks training against
    return run, count
