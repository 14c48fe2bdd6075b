//! Writing through the crate's API on images made by mkfs.ext4, checked by
//! e2fsck, by reopening with this crate, and by debugfs.

mod common;
mod writing;

use writing::{assert_fsck_clean, contents, fresh, image_of, Clock, LAYOUTS, ROOT_OWNER};

#[test]
fn a_small_file_is_created_written_and_accepted_by_e2fsck() {
    for &(block_size, features) in LAYOUTS {
        let context = format!("{block_size} {features}");
        let mut fs = fresh(block_size, 8, features);
        let mut clock = Clock(0);
        let root = fs.root();
        let file = fs.create(root, b"hello.txt", 0o644, ROOT_OWNER, clock.tick()).unwrap();
        assert_eq!(fs.write(file, 0, b"hello, world\n", clock.tick()).unwrap(), 13);
        assert_eq!(contents(&fs, file), b"hello, world\n", "{context}");
        let image = image_of(fs);
        assert_fsck_clean(&image, &context);
    }
}
