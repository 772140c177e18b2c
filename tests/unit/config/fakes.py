"""A tiny plugin world for configuration tests: plugin classes that declare
extension points but are never built, their registry, and a default
multiPoint set shaped like upstream's (gate, sort, filters, scorers, binder)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from scheduler.config import PluginRef, points_of_classes
from scheduler.framework.handle import Handle
from scheduler.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from scheduler.framework.registry import PluginSpec, Registry


class _Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", frozen=True)


class ResourceWeight(_Args):
    name: str
    weight: int = Field(default=1, ge=1, le=100)


class ScoringStrategy(_Args):
    type: Literal["LeastAllocated", "MostAllocated"] = "LeastAllocated"
    resources: tuple[ResourceWeight, ...] = (
        ResourceWeight(name="cpu"),
        ResourceWeight(name="memory"),
    )


class FitArgs(_Args):
    ignored_resources: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy()


class PreemptionArgs(_Args):
    min_candidate_nodes_percentage: int = Field(default=10, ge=0, le=100)
    min_candidate_nodes_absolute: int = Field(default=100, ge=0)


class SortArgs(_Args):
    oldest_first: bool = True


class Gate(PreEnqueuePlugin):
    name = "Gate"


class Sort(QueueSortPlugin):
    name = "Sort"


class OtherSort(QueueSortPlugin):
    name = "OtherSort"


class NodeName(FilterPlugin):
    name = "NodeName"


class Taint(FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "Taint"


class Fit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "Fit"


class Volume(PreFilterPlugin, FilterPlugin, ReservePlugin, PreBindPlugin):
    name = "Volume"


class Preemption(PostFilterPlugin):
    name = "Preemption"


class Balanced(PreScorePlugin, ScorePlugin):
    name = "Balanced"


class Image(ScorePlugin):
    name = "Image"


class Binder(BindPlugin):
    name = "Binder"


class OtherBinder(BindPlugin):
    name = "OtherBinder"


class Extra(FilterPlugin, ScorePlugin):
    """Not in the defaults: enabled only by configuration."""

    name = "Extra"


class Gatekeeper(PermitPlugin, PostBindPlugin):
    """Not in the defaults; implements points no default plugin uses."""

    name = "Gatekeeper"


def _never_built(args: Any, handle: Handle) -> Plugin:
    raise AssertionError("configuration tests never build plugins")


CLASSES: tuple[type[Plugin], ...] = (
    Gate,
    Sort,
    OtherSort,
    NodeName,
    Taint,
    Fit,
    Volume,
    Preemption,
    Balanced,
    Image,
    Binder,
    OtherBinder,
    Extra,
    Gatekeeper,
)
ARGS_MODELS: dict[str, type[BaseModel]] = {
    Fit.name: FitArgs,
    Preemption.name: PreemptionArgs,
    Sort.name: SortArgs,
}

REGISTRY = Registry(
    PluginSpec(cls.name, cls, _never_built, ARGS_MODELS.get(cls.name)) for cls in CLASSES
)
POINTS_OF = points_of_classes(CLASSES)

DEFAULT_PLUGINS: tuple[PluginRef, ...] = (
    PluginRef(Gate.name),
    PluginRef(Sort.name),
    PluginRef(NodeName.name),
    PluginRef(Taint.name, 3),
    PluginRef(Fit.name, 1),
    PluginRef(Volume.name),
    PluginRef(Preemption.name),
    PluginRef(Balanced.name, 1),
    PluginRef(Image.name, 1),
    PluginRef(Binder.name),
)
