-- An error group's sample exception message is quoted on the overview and in notifications. It is
-- now stored masked as its record's content is (a message quoting a masked payload value or
-- header is hidden, ops/redact ErrorSample); samples stored before were kept as read, so they are
-- dropped: the next record of the group brings a masked one.
UPDATE error_group SET sample_message = '';
