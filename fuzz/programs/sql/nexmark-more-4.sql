INSERT INTO q15
SELECT DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS `day`,
       COUNT(*) AS total_bids,
       COUNT(*) FILTER (WHERE price < 10000) AS rank1_bids,
       COUNT(DISTINCT bidder) AS total_bidders,
       COUNT(DISTINCT auction) AS total_auctions
FROM bid
GROUP BY DATE_FORMAT(dateTime, 'yyyy-MM-dd')
