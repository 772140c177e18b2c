"""Consumable capacity (``allowMultipleAllocations``), as upstream incubating.

For every capacity of a device the amount a request consumes is: the
request's ``capacity.requests[name]`` rounded up by the device's request
policy (``validRange``: up to ``min`` then to ``min + n*step``;
``validValues``: up to the first value not below it), else the policy's
``default``, else the whole capacity. The amount must satisfy the policy,
and already-allocated + being-allocated + this amount must not exceed the
capacity. Requesting a capacity the device lacks makes the device unusable.
Pure arithmetic over exact decimals.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal

from plugins.dynamicresources.model import Capacity, CapacityPolicy

_ZERO = Decimal(0)


def _ceil(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def consumed_amount(requested: Decimal | None, capacity: Capacity) -> Decimal:
    policy = capacity.policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return requested
    if policy.has_range and policy.min is not None:
        if requested < policy.min:
            return policy.min
        if policy.step is None:
            return requested
        step, low = _ceil(policy.step), _ceil(policy.min)
        steps, remainder = divmod(_ceil(requested) - low, step)
        return Decimal(low + step * (steps + (1 if remainder else 0)))
    if policy.valid_values:
        for valid in policy.valid_values:
            if requested <= valid:
                return valid
    return requested


def violates_policy(amount: Decimal, policy: CapacityPolicy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and amount == policy.default:
        return False
    if policy.has_range:
        if policy.max is not None and amount > policy.max:
            return True
        if policy.step is not None and policy.min is not None:
            return (_ceil(amount) - _ceil(policy.min)) % _ceil(policy.step) != 0
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False


def consumed_capacity(
    requests: Mapping[str, Decimal] | None, capacity: Mapping[str, Capacity]
) -> dict[str, Decimal]:
    """What one allocation of the device consumes, per capacity name."""
    requests = requests or {}
    return {name: consumed_amount(requests.get(name), cap) for name, cap in capacity.items()}


def fits_capacity(
    requests: Mapping[str, Decimal] | None,
    capacity: Mapping[str, Capacity],
    allocated: Mapping[str, Decimal],
    allocating: Mapping[str, Decimal],
) -> bool:
    """Upstream ``CmpRequestOverCapacity`` (an unknown capacity name is False)."""
    if requests and any(name not in capacity for name in requests):
        return False
    requests = requests or {}
    for name, cap in capacity.items():
        amount = consumed_amount(requests.get(name), cap)
        if violates_policy(amount, cap.policy):
            return False
        total = allocated.get(name, _ZERO) + amount + allocating.get(name, _ZERO)
        if total > cap.value:
            return False
    return True
