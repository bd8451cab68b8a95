-- The schema of a database at migration 004_item_note (annotate before migration 005),
-- dumped from a fresh database; used by tests/store/test_migration_005.py.
CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT);
CREATE TABLE study (
	id INTEGER NOT NULL, 
	name VARCHAR NOT NULL, 
	kind VARCHAR NOT NULL, 
	title VARCHAR NOT NULL, 
	description VARCHAR NOT NULL, 
	settings_json VARCHAR NOT NULL, 
	fingerprint VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE annotator (
	id INTEGER NOT NULL, 
	name VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE question (
	id INTEGER NOT NULL, 
	study_id INTEGER NOT NULL, 
	"key" VARCHAR NOT NULL, 
	subject VARCHAR NOT NULL, 
	text VARCHAR NOT NULL, 
	choices_json VARCHAR, 
	PRIMARY KEY (id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES study (id) ON DELETE CASCADE
);
CREATE TABLE modelinfo (
	id INTEGER NOT NULL, 
	study_id INTEGER NOT NULL, 
	model VARCHAR NOT NULL, 
	meta_json VARCHAR NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (study_id, model), 
	FOREIGN KEY(study_id) REFERENCES study (id) ON DELETE CASCADE
);
CREATE TABLE prompt (
	id INTEGER NOT NULL, 
	study_id INTEGER NOT NULL, 
	"key" VARCHAR NOT NULL, 
	text VARCHAR NOT NULL, 
	category VARCHAR NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES study (id) ON DELETE CASCADE
);
CREATE TABLE item (
	id INTEGER NOT NULL, 
	study_id INTEGER NOT NULL, 
	"key" VARCHAR NOT NULL, 
	position INTEGER NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES study (id) ON DELETE CASCADE
);
CREATE TABLE subjectchoice (
	id INTEGER NOT NULL, 
	study_id INTEGER NOT NULL, 
	annotator_id INTEGER NOT NULL, 
	subject VARCHAR NOT NULL, 
	excluded BOOLEAN NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(study_id) REFERENCES study (id) ON DELETE CASCADE, 
	FOREIGN KEY(annotator_id) REFERENCES annotator (id) ON DELETE CASCADE
);
CREATE TABLE responsescore (
	id INTEGER NOT NULL, 
	question_id INTEGER NOT NULL, 
	model VARCHAR NOT NULL, 
	score FLOAT NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (question_id, model), 
	FOREIGN KEY(question_id) REFERENCES question (id) ON DELETE CASCADE
);
CREATE TABLE modelresponse (
	id INTEGER NOT NULL, 
	prompt_id INTEGER NOT NULL, 
	model VARCHAR NOT NULL, 
	text VARCHAR NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (prompt_id, model), 
	FOREIGN KEY(prompt_id) REFERENCES prompt (id) ON DELETE CASCADE
);
CREATE TABLE questionpair (
	item_id INTEGER NOT NULL, 
	first_id INTEGER NOT NULL, 
	second_id INTEGER NOT NULL, 
	PRIMARY KEY (item_id), 
	FOREIGN KEY(item_id) REFERENCES item (id) ON DELETE CASCADE, 
	FOREIGN KEY(first_id) REFERENCES question (id) ON DELETE CASCADE, 
	FOREIGN KEY(second_id) REFERENCES question (id) ON DELETE CASCADE
);
CREATE TABLE battle (
	item_id INTEGER NOT NULL, 
	prompt_id INTEGER, 
	model_a VARCHAR NOT NULL, 
	model_b VARCHAR NOT NULL, 
	PRIMARY KEY (item_id), 
	FOREIGN KEY(item_id) REFERENCES item (id) ON DELETE CASCADE, 
	FOREIGN KEY(prompt_id) REFERENCES prompt (id) ON DELETE CASCADE
);
CREATE TABLE vote (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36) NOT NULL, 
	study_id INTEGER NOT NULL, 
	annotator_id INTEGER NOT NULL, 
	item_id INTEGER NOT NULL, 
	choice VARCHAR NOT NULL, 
	swapped BOOLEAN NOT NULL, 
	response_ms INTEGER, 
	fast BOOLEAN NOT NULL, 
	created_at DATETIME NOT NULL, 
	supersedes VARCHAR, 
	PRIMARY KEY (id), 
	UNIQUE (uuid), 
	UNIQUE (supersedes), 
	FOREIGN KEY(study_id) REFERENCES study (id) ON DELETE CASCADE, 
	FOREIGN KEY(annotator_id) REFERENCES annotator (id) ON DELETE CASCADE, 
	FOREIGN KEY(item_id) REFERENCES item (id) ON DELETE CASCADE
);
CREATE TABLE reservation (
	id INTEGER NOT NULL, 
	study_id INTEGER NOT NULL, 
	item_id INTEGER NOT NULL, 
	annotator_id INTEGER NOT NULL, 
	expires_at FLOAT NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (study_id, annotator_id), 
	FOREIGN KEY(study_id) REFERENCES study (id) ON DELETE CASCADE, 
	FOREIGN KEY(item_id) REFERENCES item (id) ON DELETE CASCADE, 
	FOREIGN KEY(annotator_id) REFERENCES annotator (id) ON DELETE CASCADE
);
CREATE TABLE itemnote (
	id INTEGER NOT NULL, 
	uuid VARCHAR(36) NOT NULL, 
	study_id INTEGER NOT NULL, 
	item_id INTEGER NOT NULL, 
	annotator_id INTEGER NOT NULL, 
	vote_uuid VARCHAR, 
	kind VARCHAR NOT NULL, 
	reason VARCHAR NOT NULL, 
	text VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (uuid), 
	FOREIGN KEY(study_id) REFERENCES study (id) ON DELETE CASCADE, 
	FOREIGN KEY(item_id) REFERENCES item (id) ON DELETE CASCADE, 
	FOREIGN KEY(annotator_id) REFERENCES annotator (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX ix_study_name ON study (name);
CREATE UNIQUE INDEX ix_annotator_name ON annotator (name);
CREATE INDEX ix_question_study_id ON question (study_id);
CREATE INDEX ix_modelinfo_study_id ON modelinfo (study_id);
CREATE INDEX ix_prompt_study_id ON prompt (study_id);
CREATE INDEX ix_item_study_id ON item (study_id);
CREATE INDEX ix_subjectchoice_study_id ON subjectchoice (study_id);
CREATE INDEX ix_subjectchoice_annotator_id ON subjectchoice (annotator_id);
CREATE INDEX ix_responsescore_question_id ON responsescore (question_id);
CREATE INDEX ix_modelresponse_prompt_id ON modelresponse (prompt_id);
CREATE INDEX ix_questionpair_second_id ON questionpair (second_id);
CREATE INDEX ix_questionpair_first_id ON questionpair (first_id);
CREATE INDEX ix_battle_prompt_id ON battle (prompt_id);
CREATE INDEX ix_vote_annotator_id ON vote (annotator_id);
CREATE UNIQUE INDEX ux_vote_chain_root ON vote (annotator_id, item_id) WHERE supersedes IS NULL;
CREATE INDEX ix_vote_study_id ON vote (study_id);
CREATE INDEX ix_vote_study_item ON vote (study_id, item_id);
CREATE INDEX ix_reservation_item ON reservation (item_id, expires_at);
CREATE INDEX ix_itemnote_annotator_id ON itemnote (annotator_id);
CREATE INDEX ix_itemnote_study_item ON itemnote (study_id, item_id);
CREATE VIEW current_vote AS
            SELECT v.* FROM vote AS v
            WHERE v.choice != 'retract'
              AND NOT EXISTS (SELECT 1 FROM vote AS w WHERE w.supersedes = v.uuid);
INSERT INTO _migrations (name, applied_at) VALUES ('001_baseline', '2026-01-01 00:00:00');
INSERT INTO _migrations (name, applied_at) VALUES ('002_current_vote_view', '2026-01-01 00:00:00');
INSERT INTO _migrations (name, applied_at) VALUES ('003_reservation', '2026-01-01 00:00:00');
INSERT INTO _migrations (name, applied_at) VALUES ('004_item_note', '2026-01-01 00:00:00');
