INSERT INTO q16
SELECT channel, DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS `day`,
       MAX(DATE_FORMAT(dateTime, 'HH:mm')) AS `minute`,
       COUNT(*) AS total_bids, COUNT(DISTINCT bidder) AS total_bidders
FROM bid
GROUP BY channel, DATE_FORMAT(dateTime, 'yyyy-MM-dd')
