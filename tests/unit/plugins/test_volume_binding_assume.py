"""VolumeBinding's assume cache: assumptions live until the informer moves on."""

from __future__ import annotations

import pytest

from plugins.volume_binding.assume import AssumeCache, AssumeError
from tests.support.informers import FakeStore
from tests.support.storage import make_pvc

KEY = "default/c"


def cache_with(version: str = "1") -> tuple[AssumeCache, FakeStore]:
    store = FakeStore([make_pvc("c").resource_version(version).obj()])
    return AssumeCache(store, "persistentvolumeclaims"), store


def test_assumed_object_is_seen_until_a_newer_version_arrives() -> None:
    cache, store = cache_with()
    assumed = make_pvc("c").selected_node("n1").obj()
    assert "annotations" not in (cache.get(KEY) or {})["metadata"]
    cache.assume(assumed)
    assert cache.get(KEY) is assumed
    assert [obj["metadata"]["name"] for obj in cache.list()] == ["c"]
    assert next(iter(cache.list())) is assumed
    assert cache.get_api_object(KEY) is not assumed
    store.put(make_pvc("c").resource_version("2").obj())
    assert cache.get(KEY) is not assumed
    assert cache.assumed_count() == 0


def test_restore_drops_only_the_given_version() -> None:
    cache, _ = cache_with()
    assumed = make_pvc("c").selected_node("n1").obj()
    cache.assume(assumed)
    cache.restore(make_pvc("c").resource_version("0").obj())
    assert cache.get(KEY) is assumed
    cache.restore(assumed)
    assert cache.get(KEY) is not assumed


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(
            make_pvc("c").resource_version("0").obj(),
            '"default/c" is out of sync (stored: 1, assume: 0)',
            id="out of sync",
        ),
        pytest.param(
            make_pvc("gone").obj(),
            'persistentvolumeclaims "default/gone" not found',
            id="missing",
        ),
    ],
)
def test_assume_refuses(obj: dict[str, object], message: str) -> None:
    cache, _ = cache_with()
    with pytest.raises(AssumeError) as raised:
        cache.assume(obj)
    assert str(raised.value) == message
