CREATE TABLE bid (
  auction BIGINT,
  price BIGINT,
  proc AS PROCTIME()
) WITH ('connector' = 'kafka');
INSERT INTO hot_items
SELECT auction, window_start, COUNT(*) AS num
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(proc), INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end
