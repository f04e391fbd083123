"""Hyperbolic entailment cones (docs/engine.md#hierarchy; Ganea, Bécigneul & Hofmann 2018, "Hyperbolic Entailment
Cones for Learning Hierarchical Embeddings"). Pure numpy over plain arrays: no storage, no clock.

Mapping into the Poincaré ball (curvature −1). A node's direction is its unit embedding u (E1, or E5/E7); its
norm says how specific it is, so general concepts sit near the origin, where cones are wide:

    generality g_i  = the rank, within the set, of node i's centrality, scaled to [0, 1] (1 = most central);
                      centrality = its soft degree, Σ cosine over its nearest memories at cosine ≥ a floor (how
                      many memories it is similar to, weighted by how similar): a memory that many others
                      resemble stands for what they share ("Animals such as dogs, cats and horses…");
    radius r_i      = r_max − (r_max − r_min)·g_i,   r_min ≥ ε(K) so every point has a defined cone;
    x_i             = exp_0(artanh(r_i)·u_i) = tanh(artanh(r_i))·u_i = r_i·u_i  (exponential map at the origin),
                      u_i first pulled towards the set's mean direction (`pull_to_axis`), since raw sentence
                      vectors of related memories are 50–70° apart, wider than any cone away from the origin.

A zero vector has no direction: it maps to the origin's neighbour r·e₀ with no cone semantics beyond that
(never NaN).

Cones (Ganea et al. eq. 26 and 28), for x ≠ 0 with ‖x‖ < 1:
    half-aperture ψ(x)  = arcsin(min(1, K·(1 − ‖x‖²)/‖x‖))
    Ξ(x, y)             = arccos( (⟨x,y⟩(1 + ‖x‖²) − ‖x‖²(1 + ‖y‖²)) / (‖x‖·‖x − y‖·√(1 + ‖x‖²‖y‖² − 2⟨x,y⟩)) )
                          the angle at x between the cone's axis (the ray from the origin through x, outward) and
                          the geodesic from x to y;
    y ∈ cone(x)  ⇔  Ξ(x, y) ≤ ψ(x).
Ancestors of y: the nodes whose cone contains y; descendants of x: the nodes inside x's cone. A point is never
its own strict ancestor (the diagonal is excluded). Confidence of a membership = 1 − Ξ/ψ (1 on the axis, 0 on
the cone's wall)."""

from __future__ import annotations

import numpy as np

_TINY = 1e-12


def min_radius(k: float) -> float:
    """ε(K): the smallest norm at which K(1 − r²)/r ≤ 1, i.e. where the cone stops being a half-space."""
    return float((-1.0 + np.sqrt(1.0 + 4.0 * k * k)) / (2.0 * k)) if k > 0 else 0.0


def rank_generality(scores: np.ndarray) -> np.ndarray:
    """Generality in [0, 1] from centrality scores: the rank of each score scaled to [0, 1] (1 = the most
    central; ties keep their input order). One score → [1.0]."""
    s = np.nan_to_num(np.asarray(scores, dtype=np.float64))
    n = s.size
    if n <= 1:
        return np.ones(n)
    ranks = np.empty(n)
    ranks[np.argsort(s, kind="stable")] = np.arange(n)
    return ranks / (n - 1)


def soft_degree(similarities: np.ndarray, floor: float) -> float:
    """How many memories a node is similar to, weighted by how similar: Σ cosine over those at ≥ floor."""
    s = np.nan_to_num(np.asarray(similarities, dtype=np.float64))
    return float(s[s >= floor].sum())


def generality(vectors: np.ndarray, floor: float) -> np.ndarray:
    """Generality of each row of `vectors` (n × d) within the set itself: rank_generality of its soft degree
    to the other rows. (The service scores each node against its own nearest memories in the whole store
    instead, so a node's place does not depend on which neighbourhood is being queried.)"""
    v = np.asarray(vectors, dtype=np.float64)
    n = v.shape[0]
    if n == 0:
        return np.zeros(0)
    u = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), _TINY)
    sims = u @ u.T
    np.fill_diagonal(sims, -np.inf)
    return rank_generality(np.array([soft_degree(row, floor) for row in sims]))


def pull_to_axis(vectors: np.ndarray, amount: float) -> np.ndarray:
    """Unit directions moved towards the set's mean direction: normalize(c + amount·(u − c)). amount = 1 keeps
    them, smaller values narrow the angles between them (related sentence vectors sit 50–70° apart, wider than
    any cone away from the origin) while keeping their order around the axis. Zero rows stay zero."""
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    u = np.where(norms > _TINY, v / np.maximum(norms, _TINY), 0.0)
    c = u.sum(axis=0)
    nc = np.linalg.norm(c)
    if nc <= _TINY:
        return u
    c = c / nc
    w = np.where(norms > _TINY, c + amount * (u - c), 0.0)
    return w / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), _TINY)


def to_ball(vectors: np.ndarray, general: np.ndarray, r_min: float, r_max: float) -> np.ndarray:
    """Points in the Poincaré ball: direction = the unit vector, norm = r_max − (r_max − r_min)·generality (the
    exponential map at the origin of artanh(r)·u). Zero vectors get the first basis direction."""
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    u = np.where(norms > _TINY, v / np.maximum(norms, _TINY), 0.0)
    if v.shape[1]:
        u[norms[:, 0] <= _TINY, 0] = 1.0
    r = r_max - (r_max - r_min) * np.clip(np.asarray(general, dtype=np.float64), 0.0, 1.0)
    return np.tanh(np.arctanh(r))[:, None] * u


def half_aperture(x: np.ndarray, k: float) -> np.ndarray:
    """ψ(x) = arcsin(min(1, K(1 − ‖x‖²)/‖x‖)) per row; π/2 at (or near) the origin."""
    nx = np.linalg.norm(np.atleast_2d(x), axis=1)
    arg = np.where(nx > _TINY, k * (1.0 - nx * nx) / np.maximum(nx, _TINY), 1.0)
    return np.arcsin(np.clip(arg, -1.0, 1.0))


def cone_angles(points: np.ndarray) -> np.ndarray:
    """Ξ[i, j] = the angle at points[i] between its cone axis and the geodesic to points[j] (n × n, radians).
    The diagonal, and rows at the origin, are 0 (no defined direction: treated as on the axis)."""
    p = np.asarray(points, dtype=np.float64)
    dots = p @ p.T
    sq = np.diag(dots)
    nx = np.sqrt(sq)
    diff = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * dots, 0.0))
    inner = np.sqrt(np.maximum(1.0 + sq[:, None] * sq[None, :] - 2.0 * dots, 0.0))
    num = dots * (1.0 + sq[:, None]) - sq[:, None] * (1.0 + sq[None, :])
    den = nx[:, None] * diff * inner
    cos = np.where(den > _TINY, num / np.maximum(den, _TINY), 1.0)
    return np.arccos(np.clip(cos, -1.0, 1.0))


def entailment(points: np.ndarray, k: float) -> tuple[np.ndarray, np.ndarray]:
    """(inside, confidence), both n × n: inside[i, j] is True when points[j] lies in points[i]'s cone (i is an
    ancestor of j), never on the diagonal; confidence[i, j] = 1 − Ξ/ψ where inside, else 0."""
    psi = half_aperture(points, k)
    xi = cone_angles(points)
    inside = xi <= psi[:, None]
    np.fill_diagonal(inside, False)
    conf = np.where(inside, 1.0 - xi / np.maximum(psi[:, None], _TINY), 0.0)
    return inside, np.clip(conf, 0.0, 1.0)
