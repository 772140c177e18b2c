"""Node order for the snapshot: zones interleaved round-robin.

Upstream lists node 0 of zone A, node 0 of zone B, ..., node 1 of zone A, ...
with zones and nodes in insertion order, so that the rotating start index of
the filter phase spreads evaluation across zones.
"""

from __future__ import annotations

from collections.abc import Mapping

REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"


def zone_key(labels: Mapping[str, str]) -> str:
    region = labels.get(REGION_LABEL, "")
    zone = labels.get(ZONE_LABEL, "")
    return f"{region}:\x00:{zone}" if region or zone else ""


class NodeTree:
    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}

    def add(self, name: str, labels: Mapping[str, str]) -> bool:
        """Add the node, or move it to the end of its new zone if its zone
        changed. Returns whether the order changed."""
        zone = zone_key(labels)
        if self._zone_of.get(name) == zone:
            return False
        self.remove(name)
        self._zones.setdefault(zone, []).append(name)
        self._zone_of[name] = zone
        return True

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]

    def ordered(self) -> list[str]:
        zones = list(self._zones.values())
        if len(zones) == 1:
            return list(zones[0])
        result: list[str] = []
        depth = max((len(names) for names in zones), default=0)
        for index in range(depth):
            result.extend(names[index] for names in zones if index < len(names))
        return result

    def __len__(self) -> int:
        return len(self._zone_of)
