import type { ColumnType } from "kysely";

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

/** One distinct artifact content, stored once however many keys name it. */
export interface ArtifactBlobTable {
  /** Hex sha256 of `body`: the content's address. */
  sha256: string;
  size: number;
  body: Uint8Array;
  created_at: CreatedAt;
}

/** An artifact key (`preview/pln_x/index.html`) and the content it holds now. */
export interface ArtifactFileTable {
  key: string;
  sha256: string;
  updated_at: UpdatedAt;
}

export interface ArtifactTables {
  artifact_blobs: ArtifactBlobTable;
  artifact_files: ArtifactFileTable;
}
