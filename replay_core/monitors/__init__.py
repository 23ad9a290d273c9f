"""Quality over time: monitors that judge the runs' rollups on a schedule and alert on evidence.

    rules    a rule: metric, filter, window, threshold or change, minimum runs; checked field by field
    judge    the metric with its 95 % interval (Wilson, order statistics, standard error) and the verdict
    check    alerts opened once and resolved once, the runs and failure patterns behind them; the schedule
    deliver  webhooks: the documented body or Slack's, signed, retried with backoff

May import storage, understand (failure patterns), whatif (Wilson intervals) and team.
"""
