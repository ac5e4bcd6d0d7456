-- The sampler's output: the latest snapshot per sampled source (what pages read), and the history
-- behind the charts and the status windows.

-- snapshot holds one row per source: kind 'kafka' (name = cluster) or 'rabbit' (name = broker).
-- data is the sampler's own JSON encoding of the last good sample, taken at "at"; a failed sample
-- sets error and error_at and leaves data and at alone, so pages keep showing the last good state.
CREATE TABLE snapshot (
    kind      text NOT NULL,
    name      text NOT NULL,
    at        timestamptz,                 -- NULL until a sample succeeded
    error     text NOT NULL DEFAULT '',    -- '' when the last sample succeeded
    error_at  timestamptz,
    data      jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (kind, name)
);

-- kafka_group_sample has one row per group per sample, not one per partition: the partitions are
-- parallel arrays (element i of each describes the same partition), so 200 groups x 50 partitions
-- sampled every 15 s is 8 M rows a week, not 400 M. Lag -1 means unknown (deleted topic, failed
-- listing); committed -1 means nothing committed.
CREATE TABLE kafka_group_sample (
    cluster     text        NOT NULL,
    group_name  text        NOT NULL,
    at          timestamptz NOT NULL,
    total_lag   bigint      NOT NULL,
    state       text        NOT NULL,
    members     int         NOT NULL,
    status      text        NOT NULL,
    topics      text[]      NOT NULL,
    partitions  int[]       NOT NULL,
    committed   bigint[]    NOT NULL,
    lag         bigint[]    NOT NULL,
    PRIMARY KEY (cluster, group_name, at),   -- one group's range reads (charts)
    CHECK (cardinality(topics) = cardinality(partitions)
       AND cardinality(topics) = cardinality(committed)
       AND cardinality(topics) = cardinality(lag))
);
-- A leader's warm-up reads every group of a cluster over the last minutes; retention deletes by time.
CREATE INDEX kafka_group_sample_at ON kafka_group_sample (at);

-- rabbit_queue_sample: one row per queue per sample, for the RabbitMQ sampler.
CREATE TABLE rabbit_queue_sample (
    broker          text             NOT NULL,
    vhost           text             NOT NULL,
    queue           text             NOT NULL,
    at              timestamptz      NOT NULL,
    ready           bigint           NOT NULL,
    unacked         bigint           NOT NULL,
    consumers       int              NOT NULL,
    publish_rate    double precision NOT NULL DEFAULT 0,   -- messages per second
    deliver_rate    double precision NOT NULL DEFAULT 0,
    ack_rate        double precision NOT NULL DEFAULT 0,
    redeliver_rate  double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (broker, vhost, queue, at)
);
CREATE INDEX rabbit_queue_sample_at ON rabbit_queue_sample (at);
