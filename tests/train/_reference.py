"""Independent numpy float64 references: an MLP, a CNN and the held-out CNN with BatchNorm
and Dropout, with their gradients written by hand, and the optimizers' update rules
(PyTorch's formulas)."""

from __future__ import annotations

import numpy as np


def softmax_ce(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    n = len(labels)
    loss = -logp[np.arange(n), labels].mean()
    d = np.exp(logp)
    d[np.arange(n), labels] -= 1
    return loss, d / n


def mlp_grads(params: dict, x, labels, layers: int):
    """Loss and gradients of gemm(trans_b)+relu layers named fc1..fcK, in float64."""
    p = {k: v.astype(np.float64) for k, v in params.items()}
    hs, h = [], x.astype(np.float64)
    for k in range(1, layers + 1):
        hs.append(h)
        h = h @ p[f"fc{k}.weight"].T + p[f"fc{k}.bias"]
        if k < layers:
            h = np.maximum(h, 0)
    loss, g = softmax_ce(h, labels)
    grads = {}
    for k in range(layers, 0, -1):
        a = hs[k - 1]
        grads[f"fc{k}.weight"] = g.T @ a
        grads[f"fc{k}.bias"] = g.sum(axis=0)
        g = g @ p[f"fc{k}.weight"]
        if k > 1:
            g = g * (a > 0)
    return loss, grads


def _conv_fwd(x, w, b):
    n, c, hh, ww = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    y = np.zeros((n, w.shape[0], hh, ww)) + b.reshape(1, -1, 1, 1)
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + hh, j:j + ww], w[:, :, i, j])
    return y


def _conv_bwd(x, w, dy):
    n, c, hh, ww = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for i in range(3):
        for j in range(3):
            dw[:, :, i, j] = np.einsum("nmhw,nchw->mc", dy, xp[:, :, i:i + hh, j:j + ww])
            dxp[:, :, i:i + hh, j:j + ww] += np.einsum("nmhw,mc->nchw", dy, w[:, :, i, j])
    return dxp[:, :, 1:-1, 1:-1], dw, dy.sum(axis=(0, 2, 3))


def cnn_grads(params: dict, x, labels, stages: int):
    """Loss and gradients of mb.train.cnn (conv-relu stages, 2x2 max pool, fc)."""
    p = {k: v.astype(np.float64) for k, v in params.items()}
    acts, h = [], x.astype(np.float64)
    for k in range(1, stages + 1):
        acts.append(h)
        h = np.maximum(_conv_fwd(h, p[f"conv{k}.weight"], p[f"conv{k}.bias"]), 0)
    n, c, s, _ = h.shape
    blocks = h.reshape(n, c, s // 2, 2, s // 2, 2)
    pooled = blocks.max(axis=(3, 5))
    flat = pooled.reshape(n, -1)
    logits = flat @ p["fc.weight"].T + p["fc.bias"]
    loss, g = softmax_ce(logits, labels)
    grads = {"fc.weight": g.T @ flat, "fc.bias": g.sum(axis=0)}
    gp = (g @ p["fc.weight"]).reshape(pooled.shape)
    mask = blocks == pooled[:, :, :, None, :, None]
    gh = (mask * gp[:, :, :, None, :, None]).reshape(h.shape)
    for k in range(stages, 0, -1):
        out = np.maximum(_conv_fwd(acts[k - 1], p[f"conv{k}.weight"], p[f"conv{k}.bias"]), 0)
        gh = gh * (out > 0)
        gx, grads[f"conv{k}.weight"], grads[f"conv{k}.bias"] = _conv_bwd(
            acts[k - 1], p[f"conv{k}.weight"], gh)
        gh = gx
    return loss, grads


def bn_cnn_grads(params: dict, x, labels, keep, eps=1e-5):
    """Loss, gradients and the batch's channel mean and variance of the held-out CNN
    (``_imported_models.cnn``): conv (3x3, pad 1, no bias) -> batch-statistics BatchNorm ->
    relu -> 2x2 max pool -> flatten -> times ``keep`` (dropout's scaled mask) -> fc."""
    p = {k: v.astype(np.float64) for k, v in params.items()}
    w = p["conv.w"]
    h = _conv_fwd(x.astype(np.float64), w, np.zeros(w.shape[0]))
    mean, var = h.mean(axis=(0, 2, 3)), h.var(axis=(0, 2, 3))
    inv = 1 / np.sqrt(var + eps)
    xhat = (h - mean[:, None, None]) * inv[:, None, None]
    a = np.maximum(xhat * p["bn.scale"][:, None, None] + p["bn.bias"][:, None, None], 0)
    n, c, s, _ = a.shape
    blocks = a.reshape(n, c, s // 2, 2, s // 2, 2)
    pooled = blocks.max(axis=(3, 5))
    dropped = pooled.reshape(n, -1) * keep
    loss, g = softmax_ce(dropped @ p["fc.w"].T + p["fc.b"], labels)
    grads = {"fc.w": g.T @ dropped, "fc.b": g.sum(axis=0)}
    gp = ((g @ p["fc.w"]) * keep).reshape(pooled.shape)
    # the digits' blank background makes ties within a window (equal positive values after
    # BatchNorm): each window's first largest element takes the gradient, as max_pool's
    # rule does; the tied elements move together, so the loss changes as much
    windows = blocks.transpose(0, 1, 2, 4, 3, 5).reshape(n, c, s // 2, s // 2, 4)
    first = np.eye(4)[windows.argmax(axis=-1)] * gp[..., None]
    ga = first.reshape(n, c, s // 2, s // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(a.shape)
    ga = ga * (a > 0)
    grads["bn.scale"] = (ga * xhat).sum(axis=(0, 2, 3))
    grads["bn.bias"] = ga.sum(axis=(0, 2, 3))
    gx = ga * p["bn.scale"][:, None, None]
    m = n * s * s
    gh = inv[:, None, None] / m * (m * gx - gx.sum(axis=(0, 2, 3))[:, None, None]
                                   - xhat * (gx * xhat).sum(axis=(0, 2, 3))[:, None, None])
    grads["conv.w"] = _conv_bwd(x.astype(np.float64), w, gh)[1]
    return loss, grads, (mean, var)


def sgd(p, g, state, lr, momentum=0.0, nesterov=False, weight_decay=0.0):
    g = g + weight_decay * p
    if momentum:
        buf = momentum * state.get("momentum", 0) + g
        state["momentum"] = buf
        g = g + momentum * buf if nesterov else buf
    return p - lr * g


def adam(p, g, state, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False):
    if decoupled:
        p = p - lr * weight_decay * p
    elif weight_decay:
        g = g + weight_decay * p
    t = state.get("step", 0) + 1
    m = beta1 * state.get("m", 0) + (1 - beta1) * g
    v = beta2 * state.get("v", 0) + (1 - beta2) * g * g
    state.update(m=m, v=v, step=t)
    mhat, vhat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return p - lr * mhat / (np.sqrt(vhat) + eps)
