INSERT INTO hot_items
SELECT auction, window_start, COUNT(*) AS num
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end
