-- remem schema 6: times before year 1000 written with a four-digit year.
-- Until schema 6, remem wrote such times unpadded ("1-01-01T..."), which sorts
-- after "2026-..." and broke reading them back; to_db now pads every year, and
-- this rewrites what earlier versions stored (data only, no change of shape).
UPDATE events SET time = substr('000' || time, -32)
WHERE time GLOB '[0-9]-*' OR time GLOB '[0-9][0-9]-*' OR time GLOB '[0-9][0-9][0-9]-*';

UPDATE records SET valid_from = substr('000' || valid_from, -32)
WHERE valid_from GLOB '[0-9]-*' OR valid_from GLOB '[0-9][0-9]-*'
   OR valid_from GLOB '[0-9][0-9][0-9]-*';

UPDATE records SET valid_until = substr('000' || valid_until, -32)
WHERE valid_until GLOB '[0-9]-*' OR valid_until GLOB '[0-9][0-9]-*'
   OR valid_until GLOB '[0-9][0-9][0-9]-*';
