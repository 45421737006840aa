INSERT INTO q5
SELECT auction, COUNT(*) AS num, window_start, window_end
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end
