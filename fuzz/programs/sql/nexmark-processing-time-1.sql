INSERT INTO q13
SELECT B.auction, B.bidder, B.price, B.dateTime, S.`value`
FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON MOD(B.auction, 10000) = S.`key`
