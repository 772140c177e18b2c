"""The parts every DynamicResources extension point works with, injected
once: the arguments, the handle, the gates in force, and the process-wide
DRA state (``manager``: claim tracker, inventory, CEL environment,
background writes) plus the extended-resource classes.

Built by the plugin's constructor and handed to the modules that implement
its extension points (``hints``, ``prefilter``, ``filtering``,
``postfilter``, ``reservation``), so each is a plain function of what it
reads and none reaches into the plugin object. Holds references only: the
state it points at is shared by every profile.
"""

from __future__ import annotations

from dataclasses import dataclass

from plugins.dynamicresources.args import DynamicResourcesArgs
from plugins.dynamicresources.cel import CelEnvironment
from plugins.dynamicresources.features import Features
from plugins.dynamicresources.inventory import DeviceInventory
from plugins.dynamicresources.state import ClaimTracker
from plugins.dynamicresources.writes import BackgroundWrites
from scheduler.framework import Handle
from scheduler.framework.deviceclasses import ExtendedResourceClasses


@dataclass(frozen=True, slots=True)
class Parts:
    args: DynamicResourcesArgs
    handle: Handle
    features: Features
    tracker: ClaimTracker
    inventory: DeviceInventory
    cel: CelEnvironment
    writes: BackgroundWrites
    extended: ExtendedResourceClasses
