"""DefaultPreemptionArgs: how many candidate nodes the dry run looks for.

Mirrors upstream ``kubescheduler.config.k8s.io/v1`` ``DefaultPreemptionArgs``:
camelCase keys, unknown keys rejected, defaults 10 % and 100 nodes, and the
upstream validation (percentage in 0..100, absolute >= 0, not both zero).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100


class DefaultPreemptionArgs(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    min_candidate_nodes_percentage: int = Field(
        default=DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE, ge=0, le=100
    )
    min_candidate_nodes_absolute: int = Field(default=DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE, ge=0)

    @model_validator(mode="after")
    def _not_both_zero(self) -> DefaultPreemptionArgs:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero"
            )
        return self
