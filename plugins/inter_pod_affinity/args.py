"""InterPodAffinityArgs: the plugin's typed, validated arguments.

Mirrors upstream ``kubescheduler.config.k8s.io/v1`` ``InterPodAffinityArgs``:
``hardPodAffinityWeight`` (default 1, in 0..100) weighs existing pods'
required affinity terms that the incoming pod matches when scoring;
``ignorePreferredTermsOfExistingPods`` skips scoring for pods without
preferred terms of their own.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


class InterPodAffinityArgs(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    hard_pod_affinity_weight: int = Field(
        default=1, ge=MIN_HARD_POD_AFFINITY_WEIGHT, le=MAX_HARD_POD_AFFINITY_WEIGHT
    )
    ignore_preferred_terms_of_existing_pods: bool = False
