"""What invokes the template's functions, as Lambda's triggers do: the reconciliation schedule (a
router that invokes the scheduler), one poller per event source mapping from a queue, and one router
per SNS subscription (moto's SNS posts every notification to it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smq.local.event_router import SNS_PATH, EventRouter, Handler
from smq.local.sqs_event_source import SqsEventSource
from smq.local.stack_functions import InProcessFunctions, as_function, template_handler
from smq.local.stack_options import REGION, SCHEDULER_FUNCTION, SCHEDULER_FUNCTION_ID, LocalStackOptions
from smq.local.stack_resources import StackResources


class FunctionTriggers:
    """`subscribe()` once the topics exist, `start()` once the functions' environment is in place,
    `shutdown()` to stop (each thread joined). `client(service)` is a boto3 client of moto."""

    def __init__(
        self,
        resources: StackResources,
        functions: InProcessFunctions,
        client: Callable[[str], Any],
        options: LocalStackOptions,
    ) -> None:
        self._resources = resources
        self._functions = functions
        self._client = client
        self._options = options
        self._router: EventRouter | None = None
        """Invokes the scheduler with the reconciliation schedule's events."""
        self._subscribers: list[EventRouter] = []
        """One router per function the template subscribes to an SNS topic."""
        self._event_sources: list[SqsEventSource] = []
        """One poller per queue a function of the template consumes."""

    def subscribe(self) -> None:
        """Subscribe each function the template subscribes to an SNS topic, through a router of its
        own: moto's SNS posts every notification to the router, which invokes the function."""
        sns = self._client("sns")
        for function, handler, topic_arn in self._resources.sns_subscriptions():
            router = EventRouter(
                as_function(function, template_handler(handler)),
                function_name=f"smq-{function}",
                reconcile_every_seconds=None,
            )
            self._subscribers.append(router)
            sns.subscribe(TopicArn=topic_arn, Protocol="http", Endpoint=f"{router.url}{SNS_PATH}")

    def start(self) -> None:
        """The reconciliation schedule, then the queues' pollers, then the topics' routers."""
        self._router = EventRouter(
            self._function_handler(SCHEDULER_FUNCTION_ID),
            function_name=SCHEDULER_FUNCTION,
            reconcile_every_seconds=self._options.reconcile_every_seconds,
        )
        self._router.start()
        self._start_event_sources()
        for subscriber in self._subscribers:
            subscriber.start()

    def shutdown(self) -> None:
        """The queues' pollers, then the routers."""
        for source in self._event_sources:
            source.shutdown()
        for router in [self._router, *self._subscribers]:
            if router is not None:
                router.shutdown()
        self._router = None
        self._subscribers = []
        self._event_sources = []

    def _start_event_sources(self) -> None:
        """One poller per event source mapping from a queue to a function, as Lambda's."""
        for source in self._resources.event_sources():
            url, arn, _ = self._resources.queue(source.queue)
            function_name = SCHEDULER_FUNCTION if source.function == SCHEDULER_FUNCTION_ID else f"smq-{source.function}"
            poller = SqsEventSource(
                lambda: self._client("sqs"),
                url,
                arn,
                self._function_handler(source.function),
                function_name=function_name,
                batch_size=source.batch_size,
                batching_window_seconds=source.batching_window_seconds,
                visibility_timeout_seconds=self._options.queue_visibility_timeout_seconds,
                region=REGION,
            )
            self._event_sources.append(poller)
            poller.start()

    def _function_handler(self, function: str) -> Handler:
        """The Handler the template names for `function`, never run twice at once."""
        return self._functions.serialized(function, self._resources.handler(function))
