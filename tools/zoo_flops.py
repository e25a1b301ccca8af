#!/usr/bin/env python3
"""Count FLOPs and memory traffic per training sample of every zoo model, layer by layer.

Used by tools/build_zoo.py (stored in each zoo file under `flops`) and runnable alone to print the
table. Torch is not needed: each model is written down here layer by layer from its definition
(torchvision 0.26 / transformers 5.17, as measured in shared/data/h200), the shapes are propagated,
and the parameter count of the walk must equal the measured model's `n_params` exactly (checked by
build_zoo.py), which pins the layer list to the real definition.

What is counted, per sample (one image, or one sequence of `seq` tokens):

    matmul FLOPs, forward   F = sum over conv / linear / attention matmuls of 2 x MACs
        conv:      2 * k_h * k_w * (C_in / groups) * C_out * H_out * W_out
        linear:    2 * d_in * d_out  (per token for transformers)
        attention: 2 * s * d (Q K^T) + 2 * s * d (P V) per token and layer, full s x s (what
                   torch.utils.flop_counter counts for scaled_dot_product_attention, causal or not)
    matmul FLOPs, training  = 3 F - F_first: backward computes the input gradient (F) and the weight
                   gradient (F) of every matmul layer, except the input gradient of the first layer
    conv FLOPs, training    the part of the training matmul FLOPs done by convolution layers, counted the
                   same way (3 x forward conv FLOPs, less the first layer's input gradient if it is a
                   conv): cuDNN runs them as implicit GEMMs, at another achieved rate than dense GEMMs
    other elements E = elements written by every non-matmul op (batch norm, layer/RMS norm, ReLU, GELU,
                   SiLU, pooling, residual add, softmax, dropout, concatenation copies, bias-free
                   elementwise), forward
    other bytes, training  = 5 E x element size: forward reads the input and writes the output (2E),
                   backward reads the output gradient and the saved tensor and writes the input
                   gradient (3E); element size 4 bytes (fp32) or 2 (AMP activations)

Bias adds of conv/linear layers are counted in neither (fused in the GEMM epilogue). Embedding
lookups count as other elements (a gather). The numbers are per sample and do not depend on batch.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

BYTES_PER_ELEMENT = {"fp32": 4, "amp_bf16": 2, "amp_fp16": 2}
OTHER_BYTES_FACTOR = 5  # 2 (forward read + write) + 3 (backward reads grad and saved, writes grad)


@dataclass
class Count:
    """Accumulates FLOPs, parameters and activation elements along a layer walk."""

    matmul_flops: float = 0.0  # forward, per sample
    first_layer_flops: float = 0.0  # forward FLOPs of the first matmul layer (no input gradient)
    other_elements: float = 0.0  # forward, per sample
    params: int = 0
    layers: int = 0
    by_kind: dict = field(default_factory=dict)
    first_layer_kind: str = ""

    def _kind(self, kind: str, flops: float = 0.0, elems: float = 0.0) -> None:
        k = self.by_kind.setdefault(kind, [0.0, 0.0])
        k[0] += flops
        k[1] += elems

    def matmul(self, kind: str, flops: float, params: int) -> None:
        if self.layers == 0:
            self.first_layer_flops = flops
            self.first_layer_kind = kind
        self.layers += 1
        self.matmul_flops += flops
        self.params += params
        self._kind(kind, flops=flops)

    def other(self, kind: str, elems: float, params: int = 0) -> None:
        self.other_elements += elems
        self.params += params
        self._kind(kind, elems=elems)

    def summary(self) -> dict:
        train = 3.0 * self.matmul_flops - self.first_layer_flops
        conv = self.by_kind.get("conv", [0.0, 0.0])[0]
        conv_train = 3.0 * conv - (self.first_layer_flops if self.first_layer_kind == "conv" else 0.0)
        return {
            "train_conv_flops_per_sample": conv_train,
            "forward_matmul_flops_per_sample": self.matmul_flops,
            "train_matmul_flops_per_sample": train,
            "forward_other_elements_per_sample": self.other_elements,
            "param_count": self.params,
            "matmul_layers": self.layers,
        }


# ----------------------------------------------------------------------------------------------------
# CNNs: a tensor is (C, H, W); layers return the new shape


def _out(size: int, k: int, s: int, p: int, ceil: bool = False) -> int:
    n = size + 2 * p - k
    q = -(-n // s) if ceil else n // s
    out = q + 1
    if ceil and (out - 1) * s >= size + p:  # PyTorch: last window must start inside the input
        out -= 1
    return out


class Cnn:
    def __init__(self, c: int, h: int, w: int):
        self.n = Count()
        self.shape = (c, h, w)

    def conv(self, cout: int, k, s=1, p=0, bias: bool = False, shape=None):
        c, h, w = shape or self.shape
        kh, kw = (k, k) if isinstance(k, int) else k
        ph, pw = (p, p) if isinstance(p, int) else p
        ho, wo = _out(h, kh, s, ph), _out(w, kw, s, pw)
        flops = 2.0 * kh * kw * c * cout * ho * wo
        self.n.matmul("conv", flops, kh * kw * c * cout + (cout if bias else 0))
        self.shape = (cout, ho, wo)
        return self.shape

    def bn(self, shape=None):
        c, h, w = shape or self.shape
        self.n.other("batch_norm", c * h * w, 2 * c)
        return shape or self.shape

    def act(self, kind="relu", shape=None):
        c, h, w = shape or self.shape
        self.n.other(kind, c * h * w)
        return shape or self.shape

    def pool(self, k, s, p=0, ceil=False, kind="pool", shape=None):
        c, h, w = shape or self.shape
        ho, wo = _out(h, k, s, p, ceil), _out(w, k, s, p, ceil)
        self.n.other(kind, c * ho * wo)
        self.shape = (c, ho, wo)
        return self.shape

    def adaptive_pool(self, oh, ow):
        c, _, _ = self.shape
        self.n.other("pool", c * oh * ow)
        self.shape = (c, oh, ow)
        return self.shape

    def linear(self, din: int, dout: int, bias: bool = True):
        self.n.matmul("linear", 2.0 * din * dout, din * dout + (dout if bias else 0))
        self.shape = (dout, 1, 1)
        return self.shape

    def elementwise(self, kind: str, shape=None):
        c, h, w = shape or self.shape
        self.n.other(kind, c * h * w)

    def basic_conv(self, cout, k, s=1, p=0, shape=None):
        """conv (no bias) + batch norm + ReLU (torchvision BasicConv2d)."""
        out = self.conv(cout, k, s, p, shape=shape)
        self.bn(out)
        self.act("relu", out)
        return out

    def concat(self, shapes):
        c = sum(s[0] for s in shapes)
        _, h, w = shapes[0]
        assert all(s[1:] == (h, w) for s in shapes), shapes
        self.n.other("concat", c * h * w)
        self.shape = (c, h, w)
        return self.shape


def alexnet() -> Count:
    m = Cnn(3, 224, 224)
    for cout, k, s, p, pool in ((64, 11, 4, 2, True), (192, 5, 1, 2, True), (384, 3, 1, 1, False),
                                (256, 3, 1, 1, False), (256, 3, 1, 1, True)):
        m.conv(cout, k, s, p, bias=True)
        m.act()
        if pool:
            m.pool(3, 2)
    m.adaptive_pool(6, 6)
    for din, dout, last in ((256 * 36, 4096, False), (4096, 4096, False), (4096, 1000, True)):
        if not last:
            m.n.other("dropout", din)
        m.linear(din, dout)
        if not last:
            m.act()
    return m.n


def vgg16() -> Count:
    m = Cnn(3, 224, 224)
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if v == "M":
            m.pool(2, 2)
        else:
            m.conv(v, 3, 1, 1, bias=True)
            m.act()
    m.adaptive_pool(7, 7)
    m.linear(512 * 49, 4096)
    m.act()
    m.n.other("dropout", 4096)
    m.linear(4096, 4096)
    m.act()
    m.n.other("dropout", 4096)
    m.linear(4096, 1000)
    return m.n


def resnet(blocks: tuple[int, int, int, int]) -> Count:
    m = Cnn(3, 224, 224)
    m.conv(64, 7, 2, 3)
    m.bn()
    m.act()
    m.pool(3, 2, 1)
    cin = 64
    for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
        for i in range(n):
            stride = 2 if (i == 0 and stage > 0) else 1
            x = m.shape
            m.conv(width, 1, shape=x)
            m.bn()
            m.act()
            m.conv(width, 3, stride, 1)
            m.bn()
            m.act()
            out = m.conv(width * 4, 1)
            m.bn()
            if i == 0:
                m.conv(width * 4, 1, stride, shape=x)
                m.bn()
            m.elementwise("add", out)
            m.act("relu", out)
            m.shape = out
            cin = width * 4
    m.adaptive_pool(1, 1)
    m.linear(cin, 1000)
    return m.n


def inception_v3() -> Count:
    m = Cnn(3, 299, 299)
    m.basic_conv(32, 3, 2)
    m.basic_conv(32, 3)
    m.basic_conv(64, 3, 1, 1)
    m.pool(3, 2)
    m.basic_conv(80, 1)
    m.basic_conv(192, 3)
    m.pool(3, 2)

    def branch(x, layers):
        s = x
        for cout, k, st, p in layers:
            s = m.basic_conv(cout, k, st, p, shape=s)
        return s

    def pooled(x, cout, kind="avg"):
        m.shape = x
        p = m.pool(3, 1, 1, kind=kind)
        return m.basic_conv(cout, 1, shape=p)

    def block_a(x, pf):
        return m.concat([branch(x, [(64, 1, 1, 0)]),
                         branch(x, [(48, 1, 1, 0), (64, 5, 1, 2)]),
                         branch(x, [(64, 1, 1, 0), (96, 3, 1, 1), (96, 3, 1, 1)]),
                         pooled(x, pf)])

    def block_b(x):
        m.shape = x
        mp = m.pool(3, 2)
        return m.concat([branch(x, [(384, 3, 2, 0)]),
                         branch(x, [(64, 1, 1, 0), (96, 3, 1, 1), (96, 3, 2, 0)]), mp])

    def block_c(x, c7):
        r, c = ((1, 7), (0, 3)), ((7, 1), (3, 0))
        return m.concat([branch(x, [(192, 1, 1, 0)]),
                         branch(x, [(c7, 1, 1, 0), (c7, r[0], 1, r[1]), (192, c[0], 1, c[1])]),
                         branch(x, [(c7, 1, 1, 0), (c7, c[0], 1, c[1]), (c7, r[0], 1, r[1]),
                                    (c7, c[0], 1, c[1]), (192, r[0], 1, r[1])]),
                         pooled(x, 192)])

    def block_d(x):
        m.shape = x
        mp = m.pool(3, 2)
        return m.concat([branch(x, [(192, 1, 1, 0), (320, 3, 2, 0)]),
                         branch(x, [(192, 1, 1, 0), (192, (1, 7), 1, (0, 3)), (192, (7, 1), 1, (3, 0)),
                                    (192, 3, 2, 0)]), mp])

    def block_e(x):
        b3 = branch(x, [(384, 1, 1, 0)])
        b3a = branch(b3, [(384, (1, 3), 1, (0, 1))])
        b3b = branch(b3, [(384, (3, 1), 1, (1, 0))])
        bd = branch(x, [(448, 1, 1, 0), (384, 3, 1, 1)])
        bda = branch(bd, [(384, (1, 3), 1, (0, 1))])
        bdb = branch(bd, [(384, (3, 1), 1, (1, 0))])
        return m.concat([branch(x, [(320, 1, 1, 0)]), b3a, b3b, bda, bdb, pooled(x, 192)])

    x = m.shape
    for pf in (32, 64, 64):
        x = block_a(x, pf)
    x = block_b(x)
    for c7 in (128, 160, 160, 192):
        x = block_c(x, c7)
    # auxiliary classifier (on in training): avg pool 5/3, 1x1 conv 128, 5x5 conv 768, fc 1000
    m.shape = x
    m.pool(5, 3)
    m.basic_conv(128, 1)
    m.basic_conv(768, 5)
    m.adaptive_pool(1, 1)
    m.linear(768, 1000)
    x = block_d(x)
    x = block_e(x)
    x = block_e(x)
    m.shape = x
    m.adaptive_pool(1, 1)
    m.n.other("dropout", 2048)
    m.linear(2048, 1000)
    return m.n


def googlenet() -> Count:
    """torchvision GoogLeNet without the auxiliary heads (6,624,904 parameters, as measured)."""
    m = Cnn(3, 224, 224)
    m.basic_conv(64, 7, 2, 3)
    m.pool(3, 2, ceil=True)
    m.basic_conv(64, 1)
    m.basic_conv(192, 3, 1, 1)
    m.pool(3, 2, ceil=True)

    def inception(x, c1, r3, c3, r5, c5, pp):
        b1 = m.basic_conv(c1, 1, shape=x)
        b2 = m.basic_conv(c3, 3, 1, 1, shape=m.basic_conv(r3, 1, shape=x))
        b3 = m.basic_conv(c5, 3, 1, 1, shape=m.basic_conv(r5, 1, shape=x))  # torchvision: 3x3 here
        m.shape = x
        b4 = m.basic_conv(pp, 1, shape=m.pool(3, 1, 1, ceil=True))
        return m.concat([b1, b2, b3, b4])

    x = m.shape
    x = inception(x, 64, 96, 128, 16, 32, 32)
    x = inception(x, 128, 128, 192, 32, 96, 64)
    m.shape = x
    x = m.pool(3, 2, ceil=True)
    for cfg in ((192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
                (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128)):
        x = inception(x, *cfg)
    m.shape = x
    x = m.pool(2, 2, ceil=True)
    for cfg in ((256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128)):
        x = inception(x, *cfg)
    m.shape = x
    m.adaptive_pool(1, 1)
    m.n.other("dropout", 1024)
    m.linear(1024, 1000)
    return m.n


def densenet121() -> Count:
    m = Cnn(3, 224, 224)
    m.conv(64, 7, 2, 3)
    m.bn()
    m.act()
    m.pool(3, 2, 1)
    c = 64
    for i, n in enumerate((6, 12, 24, 16)):
        for _ in range(n):
            _, h, w = m.shape
            x = (c, h, w)
            m.bn(x)  # norm1 reads the whole concatenated input
            m.act("relu", x)
            m.conv(128, 1, shape=x)
            m.bn()
            m.act()
            m.conv(32, 3, 1, 1)
            c += 32
            m.n.other("concat", c * h * w)
            m.shape = (c, h, w)
        if i < 3:
            m.bn()
            m.act()
            m.conv(c // 2, 1)
            c //= 2
            m.pool(2, 2, kind="pool")
    m.bn()
    m.act()
    m.adaptive_pool(1, 1)
    m.linear(c, 1000)
    return m.n


# ----------------------------------------------------------------------------------------------------
# Transformers: per sequence of `seq` tokens; FLOPs and elements per token times seq


def bert(hidden: int, layers: int, heads: int, seq: int = 128, vocab: int = 30522, inter: int | None = None) -> Count:
    """BertForMaskedLM: embeddings (word, position 512, type 2) + LN, encoder, MLM head tied to words."""
    n = Count()
    h, s, i = hidden, seq, inter or 4 * hidden
    n.other("embedding", 3 * s * h, (vocab + 512 + 2) * h)
    n.other("layer_norm", s * h, 2 * h)
    n.other("dropout", s * h)
    for _ in range(layers):
        n.matmul("linear", s * 2.0 * h * 3 * h, 3 * (h * h + h))
        n.matmul("attention", s * 4.0 * s * h, 0)
        n.other("softmax", 3 * heads * s * s)  # scale+mask, softmax, dropout on the score matrix
        n.matmul("linear", s * 2.0 * h * h, h * h + h)
        n.other("dropout", s * h)
        n.other("add", s * h)
        n.other("layer_norm", s * h, 2 * h)
        n.matmul("linear", s * 2.0 * h * i, h * i + i)
        n.other("gelu", s * i)
        n.matmul("linear", s * 2.0 * i * h, i * h + h)
        n.other("dropout", s * h)
        n.other("add", s * h)
        n.other("layer_norm", s * h, 2 * h)
    # MLM head: dense + GELU + LN, decoder tied to the word embeddings (own bias)
    n.matmul("linear", s * 2.0 * h * h, h * h + h)
    n.other("gelu", s * h)
    n.other("layer_norm", s * h, 2 * h)
    n.matmul("lm_head", s * 2.0 * h * vocab, vocab)
    n.other("softmax", 2 * s * vocab)  # log-softmax + cross-entropy over the vocabulary
    return n


def gpt2(hidden: int = 768, layers: int = 12, heads: int = 12, seq: int = 1024, vocab: int = 50257,
         positions: int = 1024) -> Count:
    n = Count()
    h, s = hidden, seq
    n.other("embedding", 2 * s * h, (vocab + positions) * h)
    n.other("dropout", s * h)
    for _ in range(layers):
        n.other("layer_norm", s * h, 2 * h)
        n.matmul("linear", s * 2.0 * h * 3 * h, 3 * h * h + 3 * h)
        n.matmul("attention", s * 4.0 * s * h, 0)
        n.other("softmax", 2 * heads * s * s)  # causal mask+scale, softmax (SDPA without dropout)
        n.matmul("linear", s * 2.0 * h * h, h * h + h)
        n.other("dropout", s * h)
        n.other("add", s * h)
        n.other("layer_norm", s * h, 2 * h)
        n.matmul("linear", s * 2.0 * h * 4 * h, 4 * h * h + 4 * h)
        n.other("gelu", s * 4 * h)
        n.matmul("linear", s * 2.0 * 4 * h * h, 4 * h * h + h)
        n.other("dropout", s * h)
        n.other("add", s * h)
    n.other("layer_norm", s * h, 2 * h)
    n.matmul("lm_head", s * 2.0 * h * vocab, 0)  # tied to the token embedding, no bias
    n.other("softmax", 2 * s * vocab)
    return n


def llama(hidden: int = 2048, layers: int = 16, heads: int = 32, kv_heads: int = 8, inter: int = 8192,
          vocab: int = 128256, seq: int = 2048) -> Count:
    n = Count()
    h, s = hidden, seq
    kv = h // heads * kv_heads
    n.other("embedding", s * h, vocab * h)
    for _ in range(layers):
        n.other("rms_norm", s * h, h)
        n.matmul("linear", s * 2.0 * h * (h + 2 * kv), h * (h + 2 * kv))
        n.other("rope", 2 * s * (h + kv))  # rotary embedding of q and k (cos/sin products)
        n.matmul("attention", s * 4.0 * s * h, 0)
        n.other("softmax", 2 * heads * s * s)
        n.matmul("linear", s * 2.0 * h * h, h * h)
        n.other("add", s * h)
        n.other("rms_norm", s * h, h)
        n.matmul("linear", s * 2.0 * h * 2 * inter, 2 * h * inter)
        n.other("silu_mul", 2 * s * inter)
        n.matmul("linear", s * 2.0 * inter * h, inter * h)
        n.other("add", s * h)
    n.other("rms_norm", s * h, h)
    n.matmul("lm_head", s * 2.0 * h * vocab, 0)  # tied
    n.other("softmax", 2 * s * vocab)
    return n


COUNTERS = {
    "alexnet": alexnet,
    "vgg16": vgg16,
    "inception_v3": inception_v3,
    "resnet50": lambda: resnet((3, 4, 6, 3)),
    "resnet101": lambda: resnet((3, 4, 23, 3)),
    "resnet152": lambda: resnet((3, 8, 36, 3)),
    "googlenet": googlenet,
    "densenet121": densenet121,
    "bert_base": lambda: bert(768, 12, 12),
    "bert_large": lambda: bert(1024, 24, 16),
    "gpt2": gpt2,
    "llama_1b": llama,
}

METHOD = ("counted per layer from the model definition by tools/zoo_flops.py (shape walk; parameter count "
          "equals the measured n_params); training matmul FLOPs = 3 x forward - first layer's input gradient; "
          f"other bytes = {OTHER_BYTES_FACTOR} x elements written by non-matmul ops x element size")


def flops_record(model: str) -> dict:
    """The zoo file's `flops` entry for one model."""
    c = COUNTERS[model]()
    out = {k: (int(v) if k in ("param_count", "matmul_layers") else float(v)) for k, v in c.summary().items()}
    other = c.other_elements * OTHER_BYTES_FACTOR
    out["train_other_bytes_per_sample"] = {p: other * b for p, b in BYTES_PER_ELEMENT.items() if p != "amp_fp16"}
    out["method"] = METHOD
    return out


def main() -> int:
    print(f"{'model':<13} {'params':>13} {'fwd GFLOP':>10} {'train GFLOP':>12} {'other MB fp32':>14}")
    for name in COUNTERS:
        r = flops_record(name)
        print(f"{name:<13} {r['param_count']:>13,} {r['forward_matmul_flops_per_sample'] / 1e9:>10.3f} "
              f"{r['train_matmul_flops_per_sample'] / 1e9:>12.3f} {r['train_other_bytes_per_sample']['fp32'] / 1e6:>14.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
