INSERT INTO q12
SELECT B.bidder, COUNT(*) AS bid_count,
       TUMBLE_START(B.p_time, INTERVAL '10' SECOND) AS starttime,
       TUMBLE_END(B.p_time, INTERVAL '10' SECOND) AS endtime
FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
GROUP BY B.bidder, TUMBLE(B.p_time, INTERVAL '10' SECOND)
