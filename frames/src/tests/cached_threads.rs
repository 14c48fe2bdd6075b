//! Std-thread stress: threads on their own slots allocate and free at
//! once; no frame is ever held by two threads, and all come back.

use alloc::vec::Vec;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::support::{allocator, Rng, ThreadSlot};

#[test]
fn threads_never_hold_one_frame_at_once() {
    const THREADS: usize = 8;
    const FRAMES: u64 = 300;
    let frames = Arc::new(allocator(FRAMES, 4));
    let holders: Arc<Mutex<HashSet<u64>>> = Arc::new(Mutex::new(HashSet::new()));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (frames, holders) = (frames.clone(), holders.clone());
            std::thread::spawn(move || {
                // Eight threads on four caches: two share each, as a slot
                // that wraps would.
                ThreadSlot::set(thread);
                let mut rng = Rng::new(thread as u64);
                let mut mine = Vec::new();
                for _ in 0..20_000 {
                    if rng.below(2) == 0 || mine.is_empty() {
                        if let Ok(frame) = frames.allocate() {
                            assert!(holders.lock().unwrap().insert(frame.0), "frame {frame:?} handed out twice");
                            mine.push(frame);
                        }
                    } else {
                        let frame = mine.swap_remove(rng.below(mine.len()));
                        assert!(holders.lock().unwrap().remove(&frame.0));
                        frames.free(frame).expect("a held frame frees");
                    }
                }
                for frame in mine {
                    assert!(holders.lock().unwrap().remove(&frame.0));
                    frames.free(frame).expect("a held frame frees");
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|worker| worker.join().expect("worker"));
    assert_eq!(frames.free_count(), FRAMES);
    assert_eq!(frames.handed_out_count(), 0);
}
