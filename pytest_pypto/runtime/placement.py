"""Where executed tasks sit on the simulated cores, and the seeded schedule's ready set.

`Cores` places each executed task with a unit-time list schedule (docs/design/runtime.md
§6): a record of concurrency, not a timing model.  `Ranks` is the ready-task set of a
seeded schedule (a Fenwick tree: pop the k-th smallest id in O(log n)).
"""

from __future__ import annotations


class Cores:
    """Simulated AIC/AIV slots with a unit-time occupancy table.

    Per step, bitmasks of the busy AICs (bit c), AIVs (bit v) and clusters with any
    busy core; ``aic`` takes the lowest idle AIC, ``aiv`` the lowest idle AIV, ``mix``
    the lowest cluster whose three cores are idle.  A step full for a core type stays
    full, so per type a union-find links each full step to the next one: the first
    step at or after ``earliest`` with room is found in near-constant time.
    """

    def __init__(self, clusters: int) -> None:
        self.clusters = clusters
        self.aic: list[int] = []
        self.aiv: list[int] = []
        self.cluster: list[int] = []
        self._full = {"aic": (1 << clusters) - 1, "aiv": (1 << 2 * clusters) - 1}
        self._next: dict[str, list[int]] = {"aic": [], "aiv": [], "mix": []}
        self._aic_names, self._aiv_names = _core_names(clusters)

    def place(self, core_type: str, earliest: int) -> tuple[int, tuple[str, ...]]:
        kind = core_type if core_type in ("aic", "aiv") else "mix"
        step = self._first_free(self._next[kind], earliest)
        aic, aiv, cluster = self.aic[step], self.aiv[step], self.cluster[step]
        if kind == "aic":
            bit = ~aic & (aic + 1)
            c = bit.bit_length() - 1
            aic |= bit
            cluster |= bit
            slots: tuple[str, ...] = (self._aic_names[c],)
        elif kind == "aiv":
            bit = ~aiv & (aiv + 1)
            v = bit.bit_length() - 1
            aiv |= bit
            cluster |= 1 << (v >> 1)
            slots = (self._aiv_names[v],)
        else:  # mix: one cluster's AIC and both of its AIVs
            bit = ~cluster & (cluster + 1)
            c = bit.bit_length() - 1
            aic |= bit
            aiv |= 3 << (2 * c)
            cluster |= bit
            slots = (self._aic_names[c], self._aiv_names[2 * c], self._aiv_names[2 * c + 1])
        self.aic[step], self.aiv[step], self.cluster[step] = aic, aiv, cluster
        full_c = self._full["aic"]
        if aic == full_c:
            self._next["aic"][step] = step + 1
        if aiv == self._full["aiv"]:
            self._next["aiv"][step] = step + 1
        if cluster == full_c:
            self._next["mix"][step] = step + 1
        return step, slots

    def _first_free(self, nxt: list[int], step: int) -> int:
        """The first step at or after ``step`` with room (union-find, paths halved)."""
        while True:
            if step >= len(nxt):
                self._grow(step + 1)
            up = nxt[step]
            if up == step:
                return step
            if up < len(nxt):
                nxt[step] = nxt[up]
            step = up

    def _grow(self, steps: int) -> None:
        for n in range(len(self.aic), steps):
            self.aic.append(0)
            self.aiv.append(0)
            self.cluster.append(0)
            for nxt in self._next.values():
                nxt.append(n)


_CORE_NAMES: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _core_names(clusters: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The slot names ('aic0'.., 'aiv0'..) of ``clusters`` clusters (made once per count)."""
    names = _CORE_NAMES.get(clusters)
    if names is None:
        names = _CORE_NAMES[clusters] = (
            tuple(f"aic{c}" for c in range(clusters)),
            tuple(f"aiv{v}" for v in range(2 * clusters)),
        )
    return names


class Ranks:
    """A set of ranks 0..n-1 (a Fenwick tree): add, and pop the k-th smallest."""

    __slots__ = ("tree", "n", "count", "_top")

    def __init__(self, n: int) -> None:
        self.tree = [0] * (n + 1)
        self.n = n
        self.count = 0
        self._top = 1 << n.bit_length() if n else 0

    def add(self, rank: int) -> None:
        tree, n = self.tree, self.n
        i = rank + 1
        while i <= n:
            tree[i] += 1
            i += i & -i
        self.count += 1

    def pop(self, k: int) -> int:
        """Remove and return the k-th smallest rank (k counts from 0)."""
        tree, n = self.tree, self.n
        pos, step = 0, self._top
        while step:
            nxt = pos + step
            if nxt <= n and tree[nxt] <= k:
                pos = nxt
                k -= tree[nxt]
            step >>= 1
        i = pos + 1
        while i <= n:
            tree[i] -= 1
            i += i & -i
        self.count -= 1
        return pos
