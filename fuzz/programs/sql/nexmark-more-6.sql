INSERT INTO q17
SELECT auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS `day`,
       COUNT(*) AS total_bids, MIN(price) AS min_price, MAX(price) AS max_price,
       AVG(price) AS avg_price, SUM(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd')
