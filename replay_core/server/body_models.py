"""The JSON bodies of the team and experiment routes as typed models: a field of the wrong type
(a number for a run id, a nested list for a model name, a budget of NaN) is a 422 naming it before
any handler reads it. Fields mirror the OpenAPI document (server/openapi.py); extra fields are
ignored, as the document does not forbid them. Handlers read the validated values."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from ..events import ID_MAX

RunId = Annotated[StrictStr, Field(min_length=1, max_length=ID_MAX)]
Name = Annotated[StrictStr, Field(max_length=1000)]
Text = Annotated[StrictStr, Field(max_length=100_000)]
DbInt = Annotated[StrictInt, Field(ge=0, le=2_147_483_647)]
# A budget is a finite amount above zero: NaN, infinity, zero and below mean no budget, which is refused.
BudgetUsd = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=False)]
BudgetTokens = Annotated[StrictInt, Field(gt=0, le=10**15)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class DatasetBody(_Body):
    name: Name
    runs: list[RunId] | None = None
    filter: dict[str, Name] | None = None  # its keys are checked by the handler (whatif.dataset.FILTER_KEYS)
    expected: Any = None
    match: Name | None = None
    description: Text | None = None


class ExperimentBody(_Body):
    dataset: Name
    models: list[Name] | None = None
    variants: list[dict[str, Any]] | None = None
    api_base: Name | None = None
    from_: StrictInt | StrictStr | None = Field(None, alias="from")
    scorers: list[Name] | None = None
    scorer_options: dict[str, dict[str, Any]] | None = None
    concurrency: Annotated[StrictInt, Field(ge=1, le=64)] | None = None
    budget_usd: BudgetUsd | None = None
    budget_tokens: BudgetTokens | None = None


class QueueBody(_Body):
    name: Name | None = None
    runs: list[RunId] | None = None
    filter: dict[str, StrictStr | StrictInt | float | bool] | None = None
    rubric: Any = None
    reviews_per_item: DbInt | None = None
    assign: list[Name] | None = None


class ReviewerBody(_Body):
    reviewer: Name | None = None


class ReviewBody(ReviewerBody):
    verdict: Name | None = None
    criteria: dict[str, Any] | None = None
    note: Text | None = None
    should_have: Text | None = None


class ShareBody(_Body):
    session: RunId | None = None
    other: RunId | None = None
    queue: DbInt | None = None
    expires: Name | None = None
