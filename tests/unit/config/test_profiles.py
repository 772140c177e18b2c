"""Resolving profiles against a registry: upstream's multiPoint merge and
expansion, Score weights, plugin args, and the errors that name where."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from scheduler.config import (
    CONFIGURABLE_POINTS,
    ConfigError,
    PluginRef,
    ResolvedProfile,
    extension_points_of_class,
    parse_config,
    resolve_profiles,
)
from scheduler.framework.interfaces import ExtensionPoint as EP
from scheduler.framework.interfaces import Plugin
from tests.unit.config import fakes
from tests.unit.config.builders import (
    MULTI_POINT,
    ConfigBuilder,
    ProfileBuilder,
    make_config,
    make_profile,
)


def refs(*specs: str) -> tuple[PluginRef, ...]:
    """``refs("Taint:3", "Fit")``: plugin refs, weight 1 unless given."""
    result = []
    for spec in specs:
        name, _, weight = spec.partition(":")
        result.append(PluginRef(name, int(weight or 1)))
    return tuple(result)


DEFAULT_EXPECTED: dict[EP, tuple[PluginRef, ...]] = {
    EP.PRE_ENQUEUE: refs("Gate"),
    EP.QUEUE_SORT: refs("Sort"),
    EP.PRE_FILTER: refs("Fit", "Volume"),
    EP.FILTER: refs("NodeName", "Taint", "Fit", "Volume"),
    EP.POST_FILTER: refs("Preemption"),
    EP.PRE_SCORE: refs("Taint", "Fit", "Balanced"),
    EP.SCORE: refs("Taint:3", "Fit", "Balanced", "Image"),
    EP.RESERVE: refs("Volume"),
    EP.PERMIT: (),
    EP.PRE_BIND: refs("Volume"),
    EP.BIND: refs("Binder"),
    EP.POST_BIND: (),
}


def expected(**changes: tuple[PluginRef, ...]) -> dict[EP, tuple[PluginRef, ...]]:
    """The default expectation with some points changed, by enum member name."""
    return {**DEFAULT_EXPECTED, **{EP[name]: value for name, value in changes.items()}}


def _resolve(builder: ConfigBuilder) -> list[ResolvedProfile]:
    config = parse_config(builder.yaml())
    return resolve_profiles(config, fakes.REGISTRY, fakes.DEFAULT_PLUGINS, fakes.POINTS_OF)


def _one(profile: ProfileBuilder) -> ConfigBuilder:
    return make_config().profiles(profile)


@pytest.mark.parametrize(
    ("builder", "plugins"),
    [
        pytest.param(make_config(), DEFAULT_EXPECTED, id="defaults everywhere"),
        pytest.param(
            _one(make_profile().disable(MULTI_POINT, "Taint")),
            expected(
                FILTER=refs("NodeName", "Fit", "Volume"),
                PRE_SCORE=refs("Fit", "Balanced"),
                SCORE=refs("Fit", "Balanced", "Image"),
            ),
            id="multiPoint disable removes a default from every point",
        ),
        pytest.param(
            _one(
                make_profile()
                .disable(MULTI_POINT, "*")
                .enable(MULTI_POINT, "Sort", "Fit:2", "Binder")
            ),
            {
                **dict.fromkeys(CONFIGURABLE_POINTS, ()),
                EP.QUEUE_SORT: refs("Sort"),
                EP.PRE_FILTER: refs("Fit"),
                EP.FILTER: refs("Fit"),
                EP.PRE_SCORE: refs("Fit"),
                EP.SCORE: refs("Fit:2"),
                EP.BIND: refs("Binder"),
            },
            id="multiPoint star disables every default",
        ),
        pytest.param(
            _one(make_profile().enable(MULTI_POINT, "Image:5")),
            expected(SCORE=refs("Taint:3", "Fit", "Balanced", "Image:5")),
            id="re-enabling a default replaces it in place with the user weight",
        ),
        pytest.param(
            _one(make_profile().enable(MULTI_POINT, "Taint")),
            expected(SCORE=refs("Taint:1", "Fit", "Balanced", "Image")),
            id="re-enabling a default without weight resets it to 1",
        ),
        pytest.param(
            _one(make_profile().disable(MULTI_POINT, "Taint").enable(MULTI_POINT, "Taint:2")),
            expected(
                FILTER=refs("NodeName", "Fit", "Volume", "Taint"),
                PRE_SCORE=refs("Fit", "Balanced", "Taint"),
                SCORE=refs("Fit", "Balanced", "Image", "Taint:2"),
            ),
            id="disabled then enabled in multiPoint moves to the end",
        ),
        pytest.param(
            _one(make_profile().enable(MULTI_POINT, "Gatekeeper", "Extra:4")),
            expected(
                FILTER=refs("NodeName", "Taint", "Fit", "Volume", "Extra"),
                SCORE=refs("Taint:3", "Fit", "Balanced", "Image", "Extra:4"),
                PERMIT=refs("Gatekeeper"),
                POST_BIND=refs("Gatekeeper"),
            ),
            id="new multiPoint plugins are appended at every point they implement",
        ),
        pytest.param(
            _one(make_profile().enable(EP.SCORE, "Image:4")),
            expected(SCORE=refs("Image:4", "Taint:3", "Fit", "Balanced")),
            id="an explicit plugin also in multiPoint runs first at that point",
        ),
        pytest.param(
            _one(make_profile().enable(EP.FILTER, "Extra")),
            expected(FILTER=refs("NodeName", "Taint", "Fit", "Volume", "Extra")),
            id="an explicit plugin not in multiPoint runs after the multiPoint ones",
        ),
        pytest.param(
            _one(make_profile().enable(EP.SCORE, "Extra:2", "Balanced:6")),
            expected(SCORE=refs("Balanced:6", "Taint:3", "Fit", "Image", "Extra:2")),
            id="explicit overrides first, multiPoint next, other explicit last",
        ),
        pytest.param(
            _one(make_profile().enable(MULTI_POINT, "Taint:5").enable(EP.SCORE, "Taint:7")),
            expected(SCORE=refs("Taint:7", "Fit", "Balanced", "Image")),
            id="the explicit Score weight wins over the multiPoint weight",
        ),
        pytest.param(
            _one(make_profile().enable(EP.SCORE, "Taint")),
            expected(SCORE=refs("Taint:1", "Fit", "Balanced", "Image")),
            id="an explicit Score entry without weight gets 1",
        ),
        pytest.param(
            _one(make_profile().disable(EP.SCORE, "Taint")),
            expected(SCORE=refs("Fit", "Balanced", "Image")),
            id="disabling at one point keeps the plugin at the others",
        ),
        pytest.param(
            _one(make_profile().disable(EP.SCORE, "*").enable(EP.SCORE, "Image:2")),
            expected(SCORE=refs("Image:2")),
            id="star at one point stops the expansion there but keeps explicit plugins",
        ),
        pytest.param(
            _one(make_profile().disable(EP.SCORE, "Ghost")),
            DEFAULT_EXPECTED,
            id="disabling an unknown plugin is a no-op as upstream",
        ),
        pytest.param(
            _one(make_profile().disable(MULTI_POINT, "Binder").enable(EP.BIND, "OtherBinder")),
            expected(BIND=refs("OtherBinder")),
            id="replacing the binder",
        ),
        pytest.param(
            _one(make_profile().disable(EP.QUEUE_SORT, "*").enable(EP.QUEUE_SORT, "OtherSort")),
            expected(QUEUE_SORT=refs("OtherSort")),
            id="replacing the queue sort",
        ),
    ],
)
def test_resolved_plugins(
    builder: ConfigBuilder, plugins: Mapping[EP, tuple[PluginRef, ...]]
) -> None:
    (profile,) = _resolve(builder)

    assert dict(profile.plugins) == dict(plugins)
    assert list(profile.plugins) == list(CONFIGURABLE_POINTS)


def test_profiles_resolve_independently() -> None:
    builder = make_config().profiles(
        make_profile("default-scheduler"),
        make_profile("no-preemption")
        .disable(MULTI_POINT, "Preemption")
        .set("percentageOfNodesToScore", 30),
    )

    first, second = _resolve(builder)

    assert (first.scheduler_name, first.percentage_of_nodes_to_score) == ("default-scheduler", None)
    assert dict(first.plugins) == DEFAULT_EXPECTED
    assert (second.scheduler_name, second.percentage_of_nodes_to_score) == ("no-preemption", 30)
    assert dict(second.plugins) == expected(POST_FILTER=())


@pytest.mark.parametrize(
    ("builder", "plugin", "args"),
    [
        pytest.param(
            make_config(), "Fit", fakes.FitArgs(), id="defaults filled without pluginConfig"
        ),
        pytest.param(make_config(), "Binder", None, id="a plugin without args model gets None"),
        pytest.param(
            _one(
                make_profile().plugin_config("Fit", {"scoringStrategy": {"type": "MostAllocated"}})
            ),
            "Fit",
            fakes.FitArgs.model_validate({"scoringStrategy": {"type": "MostAllocated"}}),
            id="configured args, defaults for the rest",
        ),
        pytest.param(
            _one(
                make_profile().plugin_config(
                    "Preemption",
                    {
                        "apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": "PreemptionArgs",
                        "minCandidateNodesPercentage": 50,
                    },
                )
            ),
            "Preemption",
            fakes.PreemptionArgs.model_validate({"minCandidateNodesPercentage": 50}),
            id="args may carry their apiVersion and kind",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Fit", None)),
            "Fit",
            fakes.FitArgs(),
            id="null args mean defaults",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Binder", {})),
            "Binder",
            None,
            id="empty args for a plugin without args model",
        ),
    ],
)
def test_plugin_args(builder: ConfigBuilder, plugin: str, args: object) -> None:
    (profile,) = _resolve(builder)

    assert profile.plugin_args[plugin] == args


def test_plugin_args_cover_exactly_the_enabled_plugins() -> None:
    builder = _one(
        make_profile()
        .disable(MULTI_POINT, "Preemption")
        .enable(EP.PERMIT, "Gatekeeper")
        .plugin_config("Preemption", {"minCandidateNodesAbsolute": 5})
    )

    (profile,) = _resolve(builder)

    assert sorted(profile.plugin_args) == sorted(
        {ref.name for ref in fakes.DEFAULT_PLUGINS} - {"Preemption"} | {"Gatekeeper"}
    )


@pytest.mark.parametrize(
    ("builder", "message"),
    [
        pytest.param(
            _one(make_profile().enable(MULTI_POINT, "Nope")),
            "profiles[0].plugins.multiPoint.enabled[0]: unknown plugin 'Nope'",
            id="unknown plugin in multiPoint",
        ),
        pytest.param(
            _one(make_profile().enable(EP.FILTER, "NodeName", "Nope")),
            "profiles[0].plugins.filter.enabled[1]: unknown plugin 'Nope'",
            id="unknown plugin at a point",
        ),
        pytest.param(
            _one(make_profile().enable(EP.FILTER, "Binder")),
            "profiles[0].plugins.filter.enabled[0]: plugin 'Binder' does not implement Filter",
            id="plugin at a point it does not implement",
        ),
        pytest.param(
            _one(make_profile().enable(EP.SCORE, "Image", "Image:2")),
            "profiles[0].plugins.score.enabled[1]: plugin 'Image' is enabled twice at Score",
            id="enabled twice at a point",
        ),
        pytest.param(
            _one(make_profile().enable(MULTI_POINT, "Extra", "Extra")),
            "profiles[0].plugins.multiPoint.enabled[1]: plugin 'Extra' is enabled twice in "
            "multiPoint",
            id="enabled twice in multiPoint",
        ),
        pytest.param(
            _one(make_profile().disable(MULTI_POINT, "Sort")),
            "profiles[0].plugins.queueSort: exactly one QueueSort plugin must be enabled, got 0",
            id="no queue sort",
        ),
        pytest.param(
            _one(make_profile().enable(EP.QUEUE_SORT, "OtherSort")),
            "profiles[0].plugins.queueSort: exactly one QueueSort plugin must be enabled, got 2 "
            "(Sort, OtherSort)",
            id="two queue sorts",
        ),
        pytest.param(
            _one(make_profile().disable(EP.BIND, "*")),
            "profiles[0].plugins.bind: at least one Bind plugin must be enabled",
            id="no binder",
        ),
        pytest.param(
            make_config().profiles(
                make_profile("a"),
                make_profile("b").disable(MULTI_POINT, "Sort").enable(EP.QUEUE_SORT, "OtherSort"),
            ),
            "profiles[1].plugins.queueSort: must be the same for all profiles: 'OtherSort' here, "
            "'Sort' in profiles[0]",
            id="profiles sort the queue differently",
        ),
        pytest.param(
            make_config().profiles(
                make_profile("a"),
                make_profile("b").plugin_config("Sort", {"oldestFirst": False}),
            ),
            "profiles[1].pluginConfig[Sort].args: QueueSort plugin args must be the same for all "
            "profiles",
            id="profiles configure the queue sort differently",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Fit", {}).plugin_config("Fit", {})),
            "profiles[0].pluginConfig[1].name: duplicate config for plugin 'Fit' "
            "(first at pluginConfig[0])",
            id="duplicate plugin config",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Nope", {})),
            "profiles[0].pluginConfig[0].name: unknown plugin 'Nope'",
            id="config for an unknown plugin",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Fit", {"scoringStrategy": {"type": "Random"}})),
            "profiles[0].pluginConfig[Fit].args.scoringStrategy.type: Input should be "
            "'LeastAllocated' or 'MostAllocated'",
            id="args value not allowed",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Fit", {"scoringStrategy": {"typo": 1}})),
            "profiles[0].pluginConfig[Fit].args.scoringStrategy.typo: unknown field",
            id="args unknown field",
        ),
        pytest.param(
            _one(
                make_profile().plugin_config(
                    "Fit", {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}}
                )
            ),
            "profiles[0].pluginConfig[Fit].args.scoringStrategy.resources[0].weight: must be >= 1",
            id="args nested list entry out of range",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Preemption", {"minCandidateNodesPercentage": 101})),
            "profiles[0].pluginConfig[Preemption].args.minCandidateNodesPercentage: must be <= 100",
            id="args out of range",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Fit", {"kind": "NodeResourcesFitArgs"})),
            "profiles[0].pluginConfig[Fit].args.kind: must be 'FitArgs', got "
            "'NodeResourcesFitArgs'",
            id="args of another kind",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Fit", {"apiVersion": "v1"})),
            "profiles[0].pluginConfig[Fit].args.apiVersion: must be "
            "'kubescheduler.config.k8s.io/v1', got 'v1'",
            id="args of another apiVersion",
        ),
        pytest.param(
            _one(make_profile().plugin_config("Binder", {"timeout": 3})),
            "profiles[0].pluginConfig[Binder].args: plugin 'Binder' takes no arguments, "
            "got timeout",
            id="args for a plugin without arguments",
        ),
        pytest.param(
            _one(
                make_profile()
                .disable(MULTI_POINT, "Preemption")
                .plugin_config("Preemption", {"minCandidateNodesAbsolute": -1})
            ),
            "profiles[0].pluginConfig[Preemption].args.minCandidateNodesAbsolute: must be >= 0",
            id="args are checked even for a disabled plugin",
        ),
    ],
)
def test_resolution_errors_name_where(builder: ConfigBuilder, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _resolve(builder)

    assert any(message in problem for problem in caught.value.problems), caught.value.problems


def test_problems_of_every_profile_are_reported() -> None:
    builder = make_config().profiles(
        make_profile("a").enable(EP.FILTER, "Nope"),
        make_profile("b").disable(EP.BIND, "*"),
    )

    with pytest.raises(ConfigError) as caught:
        _resolve(builder)

    assert caught.value.problems == (
        "profiles[0].plugins.filter.enabled[0]: unknown plugin 'Nope'",
        "profiles[1].plugins.bind: at least one Bind plugin must be enabled",
    )


def test_a_default_plugin_missing_from_the_registry_is_named() -> None:
    config = parse_config(make_config().yaml())

    with pytest.raises(ConfigError) as caught:
        resolve_profiles(
            config, fakes.REGISTRY, (*fakes.DEFAULT_PLUGINS, PluginRef("Ghost")), fakes.POINTS_OF
        )

    assert caught.value.problems == (
        "profiles[0].plugins.multiPoint.defaults: unknown default plugin 'Ghost'",
    )


@pytest.mark.parametrize(
    ("weight", "expected"),
    [
        pytest.param(0, 1, id="zero means 1"),
        pytest.param(1, 1, id="one"),
        pytest.param(7, 7, id="seven"),
    ],
)
def test_plugin_ref_weight(weight: int, expected: int) -> None:
    assert PluginRef("X", weight).weight == expected


def test_plugin_ref_rejects_negative_weight() -> None:
    with pytest.raises(ValueError, match="weight must be >= 0"):
        PluginRef("X", -1)


@pytest.mark.parametrize(
    ("cls", "points"),
    [
        pytest.param(fakes.Image, {EP.SCORE}, id="score only"),
        pytest.param(
            fakes.Volume, {EP.PRE_FILTER, EP.FILTER, EP.RESERVE, EP.PRE_BIND}, id="several points"
        ),
        pytest.param(fakes.Gatekeeper, {EP.PERMIT, EP.POST_BIND}, id="permit and post-bind"),
    ],
)
def test_extension_points_of_class(cls: type[Plugin], points: set[EP]) -> None:
    assert extension_points_of_class(cls) == points


@pytest.mark.parametrize("point", [pytest.param(p, id=p.value) for p in CONFIGURABLE_POINTS])
def test_every_configurable_point_has_a_plugin_set(point: EP) -> None:
    config = parse_config(make_config().profiles(make_profile().enable(point, "Image")).yaml())

    assert [e.name for e in config.profiles[0].plugins.at(point).enabled] == ["Image"]
