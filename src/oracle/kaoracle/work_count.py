"""Work counting: the floating-point work of one reference call and the fewest bytes it must move,
for the speed-of-light bound of a workload (the `count` command; src/sol/bounds.h reads the result).

The speed-of-light bound of a workload needs the floating-point work of its reference and the
fewest bytes that must move. Matrix, convolution and attention work comes from PyTorch's FLOP
counter formulas (torch.utils.flop_counter.flop_registry, the table FlopCounterMode uses),
attributed to the dtype of the op's first tensor input. Two corrections to FlopCounterMode:
the CPU flash-attention op (aten._scaled_dot_product_flash_attention_for_cpu), which
FlopCounterMode does not count at all, is counted with the same SDPA formula; and a causal SDPA
(is_causal=True) counts only the unmasked query/key pairs (upper-left aligned, as PyTorch's
causal mask: row i sees min(i + 1, Skv) keys), where FlopCounterMode reports the full
4·B·H·Sq·Skv·D. FlopCounterMode's own total is kept beside ("flop_counter_total").
Elementwise work: every pointwise op counts its output's element count, every reduction (and
softmax-like op) its largest input's element count, as FLOPs at the fp32 (CUDA-core) rate.
Bytes: each output written once, and each tensor input read once, charged for the rows (indices
along its first dimension) the reference reads from it. A paged KV cache is a pool of pages of
which a workload reads a few (018: 8 of 989 669 pages, 1.14 GB of pool): a kernel must move the
pages it reads, not the pool. The counter follows each input's storage through views and
through dtype conversions that keep its rows (`cache.squeeze(1).to(torch.float32)`), records
the rows an indexing op gathers through it (`flat[page_ids]`: aten.index, index_select,
embedding), and charges every other op that reads it with the rows its memory spans (a whole
tensor read, a slice, a select). An input the counter never sees read is charged whole.
"""

from __future__ import annotations

import torch

from .common import exc_text, torch_dtype_name
from .reference import normalize_outputs
from .timing import clone_args

_SOFTMAX_LIKE = {"_softmax", "_log_softmax", "softmax", "log_softmax", "logsumexp", "native_layer_norm",
                 "native_group_norm", "native_batch_norm", "_native_batch_norm_legit_no_training", "_fused_rms_norm",
                 "topk", "sort", "cumsum", "cumprod", "var_mean", "std_mean"}
_SDPA_OPS = {"_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
             "_scaled_dot_product_fused_attention_overrideable"}


def _causal_pairs(sq, skv):
    """Query/key pairs a causal (upper-left aligned) mask keeps: sum over rows of min(i+1, Skv)."""
    full = min(sq, skv)
    return full * (full + 1) // 2 + max(0, sq - skv) * skv


class _SolCounting:
    """The counting of SolCounter (see _make_counter): FLOPs by dtype and op, elementwise FLOPs, and
    the rows of each input that the reference reads."""

    def __init__(self):
        super().__init__()
        self.matrix = {}      # dtype name -> FLOPs
        self.by_op = {}       # op name -> FLOPs (matrix and elementwise)
        self.elementwise = 0
        self.notes = []
        # Row reads (see "Bytes" above): storage address -> (input index, first row, bytes per
        # row, byte offset of row 0, the storage kept alive so that its address is not reused).
        self.storages = {}
        self.touched = {}     # input index -> bool tensor over its rows (CPU)

    def track_inputs(self, args):
        for i, t in enumerate(args):
            if isinstance(t, torch.Tensor) and t.dim() >= 1 and t.numel() > 0 and t.stride(0) > 0:
                st = t.untyped_storage()
                self.storages[st.data_ptr()] = (i, 0, t.stride(0) * t.element_size(),
                                                t.storage_offset() * t.element_size(), st)
                self.touched[i] = torch.zeros(t.shape[0], dtype=torch.bool)

    def _window(self, t):
        """(input index, first row, end row, whether t's dim 0 runs along those rows) of the
        input rows t's memory spans, or None when t is no input's."""
        if t.numel() == 0:
            return None
        try:
            reg = self.storages.get(t.untyped_storage().data_ptr())
        except Exception:
            return None
        if reg is None:
            return None
        i, base, row_bytes, off0, _ = reg
        es = t.element_size()
        off = t.storage_offset() * es - off0
        span = (sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride())) + 1) * es
        first, end = off // row_bytes, (off + span - 1) // row_bytes + 1
        aligned = t.dim() >= 1 and t.stride(0) * es == row_bytes and off % row_bytes == 0
        return i, base + first, base + end, aligned

    def _read(self, w):
        i, first, end, _ = w
        rows = self.touched[i]
        rows[max(first, 0):min(end, rows.numel())] = True

    def _track(self, func, name, args, leaves, out):
        if getattr(func, "is_view", False) or not self.storages:
            return
        wins = [(a, self._window(a)) for a in leaves]
        if not any(w for _, w in wins):
            return
        src = args[0] if args and isinstance(args[0], torch.Tensor) else None
        ws = self._window(src) if src is not None else None
        gathered = None
        if ws and ws[3]:
            if name == "index" and len(args) > 1 and args[1] and isinstance(args[1][0], torch.Tensor):
                gathered = args[1][0]
            elif name == "index_select" and len(args) > 2 and int(args[1]) == 0:
                gathered = args[2]
            elif name == "embedding" and len(args) > 1:
                gathered = args[1]
            if gathered is not None and gathered.dtype in (torch.bool, torch.uint8):
                gathered = None
            if name in ("_to_copy", "clone") and isinstance(out, torch.Tensor) and out.dim() >= 1 and \
                    out.shape[0] == src.shape[0] and out.stride(0) > 0:
                st = out.untyped_storage()
                self.storages[st.data_ptr()] = (ws[0], ws[1], out.stride(0) * out.element_size(),
                                                out.storage_offset() * out.element_size(), st)
                return
        for a, w in wins:
            if not w:
                continue
            if a is src and gathered is not None:
                idx = gathered.detach().flatten().to("cpu", torch.long) % max(src.shape[0], 1)
                rows = self.touched[w[0]]
                idx = idx + w[1]
                rows[idx[(idx >= 0) & (idx < rows.numel())]] = True
            else:
                self._read(w)

    def input_bytes(self, values, names):
        """Bytes charged for the inputs (see "Bytes" above), and notes on the partial ones."""
        total, notes = 0, []
        for i, v in enumerate(values):
            if not isinstance(v, torch.Tensor):
                continue
            full = v.numel() * v.element_size()
            rows = self.touched.get(i)
            if rows is None or not bool(rows.any()):
                total += full
                continue
            n = int(rows.sum())
            total += full * n // rows.numel()
            if n < rows.numel():
                name = names[i] if i < len(names) else f"input {i}"
                notes.append(f"{name}: {n} of {rows.numel()} rows read")
        return total, notes

    def _add(self, dtype, op, n):
        self.matrix[dtype] = self.matrix.get(dtype, 0) + int(n)
        self.by_op[op] = self.by_op.get(op, 0) + int(n)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:
            self._count(func, args, kwargs, out)
        except Exception as e:  # counting must never break the reference
            self.notes.append(f"cannot count {func}: {exc_text(e)[:200]}")
        return out

    def _count(self, func, args, kwargs, out):
        from torch.utils.flop_counter import flop_registry, sdpa_flop_count

        packet = func.overloadpacket
        name = packet.__name__
        tensors = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        try:
            self._track(func, name, args, tensors, out)
        except Exception as e:
            self.notes.append(f"cannot follow the reads of {func}: {exc_text(e)[:200]}")
        dtype = torch_dtype_name(tensors[0].dtype) if tensors else "float32"
        if name in _SDPA_OPS:
            q, k, v = args[0], args[1], args[2]
            named = {a.name: a for a in func._schema.arguments}
            causal = False
            names = [a.name for a in func._schema.arguments]
            if "is_causal" in names:
                i = names.index("is_causal")
                causal = bool(kwargs["is_causal"]) if "is_causal" in kwargs else (
                    bool(args[i]) if i < len(args) else bool(named["is_causal"].default_value or False))
            flops = sdpa_flop_count(tuple(q.shape), tuple(k.shape), tuple(v.shape))
            if causal:
                sq, skv = q.shape[-2], k.shape[-2]
                flops = flops * _causal_pairs(sq, skv) // (sq * skv)
            self._add(dtype, name + (" (causal)" if causal else ""), flops)
            return
        if packet in flop_registry:
            self._add(dtype, name, flop_registry[packet](*args, **kwargs, out_val=out))
            return
        tags = set(func.tags)
        outs = [o for o in torch.utils._pytree.tree_leaves(out) if isinstance(o, torch.Tensor)]
        if torch.Tag.pointwise in tags:
            if name in ("copy", "copy_", "_to_copy", "clone", "fill", "fill_", "zero_", "zeros_like", "ones_like"):
                return
            n = sum(o.numel() for o in outs)
        elif torch.Tag.reduction in tags or name in _SOFTMAX_LIKE:
            n = max([t.numel() for t in tensors] or [0])
        else:
            return
        if n:
            self.elementwise += int(n)
            self.by_op[name] = self.by_op.get(name, 0) + int(n)


def _make_counter():
    """The counter class: _SolCounting as a torch dispatch mode (torch is imported lazily)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    return type("SolCounter", (_SolCounting, TorchDispatchMode), {})


def count_work(run_fn, values, input_names, outputs_spec):
    """FLOPs by dtype, elementwise FLOPs and fewest bytes for one call of the reference (run once,
    under the counters; its outputs give the bytes written)."""
    from torch.utils.flop_counter import FlopCounterMode

    SolCounter = _make_counter()
    counter = SolCounter()
    fcm = FlopCounterMode(display=False)
    args = clone_args(values)
    counter.track_inputs(args)
    with fcm:
        with counter:
            result = run_fn(*args)
    outputs = normalize_outputs(result, outputs_spec)
    del result
    bytes_in, read_notes = counter.input_bytes(args, list(input_names))
    counter.notes.extend(read_notes)
    del args
    bytes_in_whole = sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))
    bytes_out = sum(t.numel() * t.element_size() for t in outputs.values())
    del outputs
    return {
        "matrix_flops": counter.matrix,
        "elementwise_flops": counter.elementwise,
        "flops": sum(counter.matrix.values()) + counter.elementwise,
        "flop_counter_total": int(fcm.get_total_flops()),
        "by_op": counter.by_op,
        "bytes_in": int(bytes_in),
        "bytes_in_whole": int(bytes_in_whole),
        "bytes_out": int(bytes_out),
        "bytes": int(bytes_in + bytes_out),
        "notes": counter.notes,
    }

