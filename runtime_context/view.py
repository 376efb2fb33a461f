"""A role's view of the resolved config: which namespaces it holds, and the bag tree built from them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from runtime_context.bags import Bag, RecordingBag, make_bag
from runtime_context.record import ResolvedConfig
from runtime_context.settings import NAMESPACES, child_namespaces, settings_in, top_namespaces

ENFORCEMENT_MODES = ("enforce", "record", "off")


@dataclass
class ProjectionView:
    role: str | None
    allowed: frozenset[str]  # the role's declared projection
    mode: str  # enforce | record | off
    reads: Counter = field(default_factory=Counter)  # (namespace, leaf, file, line) -> count, record mode

    @property
    def visible(self) -> frozenset[str]:
        """Namespaces whose leaves are in the tree: only the projection in enforce mode."""
        return self.allowed if self.mode == "enforce" else frozenset(NAMESPACES)

    def record_read(self, namespace: str, leaf: str, filename: str, line: int) -> None:
        self.reads[(namespace, leaf, filename, line)] += 1


def build_tree(resolved: ResolvedConfig, view: ProjectionView) -> dict[str, Bag]:
    """Every bag of the view by its full namespace; a namespace with nothing visible below it is absent."""
    bag_type = RecordingBag if view.mode == "record" else Bag
    bags: dict[str, Bag] = {}

    def build(namespace: str) -> Bag | None:
        children = {c: b for c in child_namespaces(namespace) if (b := build(c)) is not None}
        if namespace in view.visible:
            # A leaf withheld from this process's record (a secret outside its projection) stays blocked.
            leaves = {
                s.name: resolved.raw_value(s.key) for s in settings_in(namespace) if resolved.has(s.key)
            }
        elif children:
            leaves = None  # a shell that only carries visible sub-namespaces
        else:
            return None
        bags[namespace] = make_bag(bag_type, namespace, leaves, children, view)
        return bags[namespace]

    for namespace in top_namespaces():
        build(namespace)
    return bags
