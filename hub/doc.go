// Package hub fetches Laya checkpoints from the Hugging Face Hub into the
// cache that the Python tools share.
//
// The cache layout is the one huggingface_hub writes, so a checkpoint that
// Python downloaded is reused here and the other way round:
//
//	$HF_HUB_CACHE/models--org--name/
//	    blobs/<etag>                  file contents, named by LFS sha256 or git oid
//	    blobs/<etag>.incomplete       a download in progress (resumed with Range)
//	    refs/<revision>               the commit a branch or tag pointed at
//	    snapshots/<commit>/<path>     relative symlinks into blobs/
//	    .no_exist/<commit>/<path>     markers for files the revision lacks
//
// Once every file a checkpoint needs is in the cache, resolving it never
// touches the network. HF_HUB_OFFLINE, HF_TOKEN, HF_ENDPOINT, HF_HOME and
// HF_HUB_CACHE are honoured as huggingface_hub honours them.
//
// Sources of the protocol facts: huggingface_hub's file_download.py and
// constants.py (cache layout, ETag/X-Linked-Etag/X-Linked-Size/X-Repo-Commit
// headers, the .incomplete + Range resume scheme, the .locks directory).
package hub
