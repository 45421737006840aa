INSERT INTO q7
SELECT window_start, window_end, MAX(price) AS maxprice
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY window_start, window_end
