"""Read-only views of a run computed from its event log (pure): what a user looks at."""

from pipeline.views._topics import TopicEntry, topic_log

__all__ = ["TopicEntry", "topic_log"]
