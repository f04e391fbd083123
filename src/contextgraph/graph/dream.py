"""Dream consolidation's math (docs/engine.md#dreams). Pure numpy over plain arrays: no storage, no clock, no randomness
beyond the generator the caller passes.

NREM — Hebbian replay. Replaying a cue memory c activates it and its graph neighbours; a memory's activation φ
in that replay is its E1 cosine to the cue, floored at 0 (the cue itself has φ = 1): activation spreads as far
as the neighbour resembles what is being replayed. Every edge (i, j) between two active memories then becomes

    w ← clip(w·(1 − decay) + η·φᵢ·φⱼ, floor, cap)

so an edge between memories that are replayed together and resemble each other strengthens, one whose ends
do not co-activate slowly decays (never below the floor).

REM — walks in a Poincaré ball. E1 vectors are projected to `dims` dimensions (PCA of the sample) and mapped
into the ball of curvature −1 by the exponential map at the origin. A walker starts at a memory and takes
steps of hyperbolic length `step` (the exponential map at its position) towards a target memory drawn with
probability softmax(−d(x, mᵢ)/T) over the hyperbolic distances (T the temperature: hot walks jump far, cold
ones stay near), jittered by a random direction; on arrival it draws the next. The memory nearest to the walker
is visited at each step. Visited pairs far apart semantically (1 − cos ≥ min_distance)
that share a causal neighbour and are not linked are blind spots: the dream links them.

Amortized shortcuts. Every traversal of a graph path (find_causal_path, get_neighborhood, a dream walk)
counts once for each of its sub-paths of at least `min_hops` hops; a path traversed `min_traversals` times
becomes a direct edge with the product of its edges' weights.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

_EPS = 1e-9
_BALL_EDGE = 1.0 - 1e-6


# -- NREM ----------------------------------------------------------------------------------------------------
def activations(cue: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """φ of each neighbour row in the replay of `cue`: max(0, cosine to the cue)."""
    if len(neighbours) == 0:
        return np.zeros(0)
    a = np.asarray(neighbours, dtype=np.float64)
    c = np.asarray(cue, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(c)
    cos = np.divide(a @ c, norms, out=np.zeros(len(a)), where=norms > 0)
    return np.clip(cos, 0.0, 1.0)


def hebbian(weights: np.ndarray, phi_i: np.ndarray, phi_j: np.ndarray, eta: float, decay: float, floor: float,
            cap: float) -> np.ndarray:
    """w·(1 − decay) + η·φᵢ·φⱼ, clipped to [floor, cap], elementwise."""
    w = np.asarray(weights, dtype=np.float64)
    return np.clip(w * (1.0 - decay) + eta * np.asarray(phi_i) * np.asarray(phi_j), floor, cap)


def recency_sample(n: int, k: int, bias: float, recent_window: int, rng: np.random.Generator) -> np.ndarray:
    """k distinct indices into n items ordered newest first: each pick comes from the `recent_window` newest with
    probability `bias`, else uniformly from all (fewer when n < k)."""
    k = min(k, n)
    chosen: list[int] = []
    taken: set[int] = set()
    window = max(1, min(recent_window, n))
    while len(chosen) < k:
        pool = window if rng.random() < bias else n
        free = [i for i in range(pool) if i not in taken]
        if not free:
            free = [i for i in range(n) if i not in taken]
        i = int(free[int(rng.integers(len(free)))])
        taken.add(i)
        chosen.append(i)
    return np.asarray(chosen, dtype=np.int64)


# -- REM: the Poincaré ball ------------------------------------------------------------------------------------
def project(vectors: np.ndarray, dims: int) -> np.ndarray:
    """The centred rows projected on their first `dims` principal directions (fewer when there are fewer rows
    or columns), each row then scaled to unit norm over the sample's largest: directions kept, spread in (0, 1]."""
    x = np.asarray(vectors, dtype=np.float64)
    x = x - x.mean(axis=0, keepdims=True)
    if len(x) < 2:
        return np.zeros((len(x), min(dims, x.shape[1] if x.ndim == 2 else dims)))
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    y = x @ vt[:dims].T
    top = np.linalg.norm(y, axis=1).max()
    return y / top if top > 0 else y


def exp0(v: np.ndarray, curvature: float = -1.0) -> np.ndarray:
    """Exponential map at the origin of the ball of curvature c < 0: tanh(√|c|‖v‖)·v/(√|c|‖v‖)."""
    s = np.sqrt(abs(curvature))
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    scale = np.divide(np.tanh(s * n), s * n, out=np.ones_like(n), where=n > _EPS)
    return v * scale


def mobius_add(x: np.ndarray, y: np.ndarray, curvature: float = -1.0) -> np.ndarray:
    c = abs(curvature)
    xy = np.sum(x * y, axis=-1, keepdims=True)
    x2 = np.sum(x * x, axis=-1, keepdims=True)
    y2 = np.sum(y * y, axis=-1, keepdims=True)
    num = (1 + 2 * c * xy + c * y2) * x + (1 - c * x2) * y
    den = 1 + 2 * c * xy + c * c * x2 * y2
    return num / np.maximum(den, _EPS)


def clip_to_ball(x: np.ndarray, curvature: float = -1.0) -> np.ndarray:
    limit = _BALL_EDGE / np.sqrt(abs(curvature))
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.where(n > limit, x * (limit / np.maximum(n, _EPS)), x)


def distance(x: np.ndarray, ys: np.ndarray, curvature: float = -1.0) -> np.ndarray:
    """Hyperbolic distance from point x to each row of ys: (2/√c)·artanh(√c‖−x ⊕ y‖)."""
    s = np.sqrt(abs(curvature))
    diff = mobius_add(np.broadcast_to(-x, ys.shape), ys, curvature)
    n = np.clip(s * np.linalg.norm(diff, axis=-1), 0.0, _BALL_EDGE)
    return (2.0 / s) * np.arctanh(n)


def exp_map(x: np.ndarray, v: np.ndarray, curvature: float = -1.0) -> np.ndarray:
    """Exponential map at x: x ⊕ tanh(√c·λₓ‖v‖/2)·v/(√c‖v‖), λₓ = 2/(1 − c‖x‖²)."""
    c = abs(curvature)
    s = np.sqrt(c)
    n = float(np.linalg.norm(v))
    if n < _EPS:
        return x
    lam = 2.0 / max(_EPS, 1.0 - c * float(x @ x))
    return clip_to_ball(mobius_add(x, np.tanh(s * lam * n / 2.0) * v / (s * n), curvature), curvature)


def walk(points: np.ndarray, start: int, rng: np.random.Generator, *, step: float, max_steps: int,
         temperature: float, curvature: float = -1.0, stop: Callable[[], bool] | None = None,
         noise: float = 0.3) -> list[int]:
    """The memories a walker visits from points[start] (consecutive repeats collapsed). The walker heads for a
    target memory drawn with probability ∝ exp(−d(x, mᵢ)/T) among the others (T the temperature: hot walks
    jump far, cold ones stay near), along the geodesic (the direction of −x ⊕ m, the log map's) jittered by a
    random direction of relative size `noise`, in steps of hyperbolic length `step`; on arrival it draws the
    next target. At each step the memory nearest to it is visited."""
    n = len(points)
    x = points[start].copy()
    visited = [start]
    if n < 2:
        return visited
    dims = points.shape[1]

    def draw(exclude: int) -> int:
        d = distance(x, points, curvature)
        logits = -d / max(temperature, _EPS)
        logits[exclude] = -np.inf
        p = np.exp(logits - logits[np.isfinite(logits)].max())
        return int(rng.choice(n, p=p / p.sum()))

    target = draw(start)
    for _ in range(max_steps):
        if stop is not None and stop():
            break
        heading = mobius_add(-x, points[target], curvature)
        hn = float(np.linalg.norm(heading))
        jitter = rng.normal(size=dims)
        jitter *= noise / max(_EPS, float(np.linalg.norm(jitter)))
        direction = (heading / hn if hn > _EPS else 0.0) + jitter
        dn = float(np.linalg.norm(direction))
        if dn < _EPS:
            continue
        # a tangent vector of Riemannian length `step` at x (‖v‖_x = λₓ‖v‖)
        lam = 2.0 / max(_EPS, 1.0 - abs(curvature) * float(x @ x))
        x = exp_map(x, direction / dn * (step / lam), curvature)
        distances = distance(x, points, curvature)
        nearest = int(np.argmin(distances))
        if nearest != visited[-1]:
            visited.append(nearest)
        if distances[target] <= step:
            target = draw(target)
    return visited


def blind_spots(visited: Sequence[str], semantic_distance: Callable[[str, str], float],
                causal_neighbours: Mapping[str, set[str]], linked: Callable[[str, str], bool],
                min_distance: float) -> list[tuple[str, str, str]]:
    """(a, b, shared causal neighbour) for each unordered pair of distinct visited memories that are at least
    `min_distance` apart, share a causal neighbour and are not linked already; each pair once, in visit order."""
    seen: set[tuple[str, str]] = set()
    out = []
    order = list(dict.fromkeys(visited))
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            key = (a, b) if a < b else (b, a)
            if key in seen:
                continue
            seen.add(key)
            shared = causal_neighbours.get(a, set()) & causal_neighbours.get(b, set())
            shared.discard(a)
            shared.discard(b)
            if not shared or linked(a, b) or semantic_distance(a, b) < min_distance:
                continue
            out.append((a, b, min(shared)))
    return out


def walk_rank(points: np.ndarray, pairs: Sequence[tuple[int, int]], curvature: float = -1.0) -> np.ndarray:
    """How strongly the walk supports each pair (i, j): the share of the other memories the walk is likelier to
    head for from i than j (or from j than i, whichever is smaller), in [0, 1). The walk draws its next target
    by softmax(−d/T), so this is the share nearer in the ball, whatever the temperature; 0 when each is the
    other's likeliest target. A share, not a probability, so that it means the same on a store of fifty
    memories, all close together, as on one of five hundred."""
    n = len(points)
    if not pairs or n < 3:
        return np.zeros(len(pairs))
    ends = sorted({k for pair in pairs for k in pair})
    distances = {i: distance(points[i], points, curvature) for i in ends}

    def share(i: int, j: int) -> float:
        d = distances[i]
        return float(np.count_nonzero(d < d[j]) - 1) / (n - 2)  # less i itself (at distance 0)

    return np.array([min(share(i, j), share(j, i)) for i, j in pairs])


# -- amortized shortcuts -----------------------------------------------------------------------------------
def sub_paths(path: Sequence[str], min_hops: int) -> Iterable[tuple[str, ...]]:
    """Every contiguous sub-path of `path` with at least `min_hops` hops and no repeated node."""
    n = len(path)
    for i in range(n):
        for j in range(i + min_hops, n):
            piece = tuple(path[i:j + 1])
            if len(set(piece)) == len(piece):
                yield piece


def shortcut_confidence(traversals: int, min_traversals: int, floor: float) -> float:
    """1 − (1 − floor)·min_traversals/traversals: exactly `floor` (0.7) at min_traversals traversals,
    rising towards 1 as the path is used more. Evidence of use only: the path's strength is its weight (the
    product of its edges' weights), and its edges' own confidences measure other things (a Causal edge's is its
    cue margin, a Semantic edge's its cosine) that would keep a well-trodden causal chain from ever qualifying."""
    if traversals <= 0:
        return 0.0
    return 1.0 - (1.0 - floor) * min(1.0, min_traversals / traversals)


def path_weight(weights: Sequence[float]) -> float:
    out = 1.0
    for w in weights:
        out *= float(w)
    return out
