"""The chat page in a real browser (Debian's chromium + chromium-driver, python3-selenium):
load /, attach an image through the file picker, ask, see the answer stream in with its
timings, ask a follow-up (multi-turn), attach and ask about a video, and save a screenshot. Skipped (exit 77) when chromium,
chromedriver or selenium is absent: scripts/install-deps.sh --browser installs them.

usage: browser_test.py --serve QVL_SERVE --model DIR --images DIR --out DIR"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util as su  # noqa: E402

ap = su.arg_parser()
ap.add_argument("--out", required=True)
args = ap.parse_args()

chromium = shutil.which("chromium")
driver_path = shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    webdriver = None
if not chromium or not driver_path or webdriver is None:
    su.skip("needs chromium, chromium-driver and python3-selenium "
            "(scripts/install-deps.sh --browser)")

os.makedirs(args.out, exist_ok=True)
server = su.Server(args.serve, args.model, "-c", "4096")
opts = webdriver.ChromeOptions()
opts.binary_location = chromium
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--window-size=1100,900"):
    opts.add_argument(a)
failures = []
browser = None
try:
    browser = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    browser.get(server.url + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda b: b.find_element(By.ID, "model").text == os.path.basename(args.model.rstrip("/")))
    browser.find_element(By.ID, "max-tokens").clear()
    browser.find_element(By.ID, "max-tokens").send_keys("40")
    browser.find_element(By.ID, "temperature").send_keys("0")
    browser.find_element(By.ID, "file").send_keys(os.path.abspath(os.path.join(args.images, "baseline420.jpg")))
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#previews img")) == 1)
    prompt = browser.find_element(By.ID, "prompt")
    prompt.send_keys("What text is in this picture?")
    prompt.send_keys(Keys.ENTER)  # the keyboard sends
    # Streaming: text shows up while the Stop button is still enabled, then the timings appear.
    seen_partial = False

    def answered():
        global seen_partial
        answers = browser.find_elements(By.CSS_SELECTOR, ".msg.assistant .text")
        stop_enabled = browser.find_element(By.ID, "stop").is_enabled()
        seen_partial = seen_partial or bool(answers and answers[-1].text and stop_enabled)
        return not stop_enabled and answers and answers[-1].text
    su.wait_until(answered, "the streamed answer to finish on the page", interval=0.005)
    stats = browser.find_elements(By.CSS_SELECTOR, ".msg.assistant .stats")
    stats_text = stats[-1].text if stats else ""
    if "time to first token" not in stats_text or "tokens/s" not in stats_text:
        failures.append(f"timings under the answer: {stats_text!r}")
    if not seen_partial:
        print("note: the answer finished before a partial state was observed (fast tiny model)")
    if len(browser.find_elements(By.CSS_SELECTOR, ".msg.user img")) != 1:
        failures.append("the sent image is not shown in the conversation")
    # A follow-up question about the same image: the page resends the whole conversation.
    prompt.send_keys("And what colour is it?")
    browser.find_element(By.ID, "send").click()
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, ".msg.assistant .stats")) == 2 and
               "tokens" in b.find_elements(By.CSS_SELECTOR, ".msg.assistant .stats")[1].text)
    # A video through the same picker: sent as a video_url part, shown in the conversation.
    clip = os.path.join(os.path.dirname(os.path.abspath(args.images)), "videos", "shapes_100x62_12fps.mp4")
    browser.find_element(By.ID, "file").send_keys(clip)
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#previews video")) == 1)
    prompt.send_keys("What moves in this clip?")
    browser.find_element(By.ID, "send").click()
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, ".msg.assistant .stats")) == 3 and
               "tokens" in b.find_elements(By.CSS_SELECTOR, ".msg.assistant .stats")[2].text)
    if len(browser.find_elements(By.CSS_SELECTOR, ".msg.user video")) != 1:
        failures.append("the sent video is not shown in the conversation")
    errors = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".error")]
    if errors:
        failures.append(f"errors shown: {errors}")
    shot = os.path.join(args.out, "chat_page.png")
    browser.save_screenshot(shot)
    print("screenshot:", shot)
    print("answer timings:", stats_text)
finally:
    if browser is not None:
        browser.quit()
    server.stop()
if failures:
    for f in failures:
        print("FAIL:", f)
    print("serve_browser: FAIL")
    sys.exit(1)
print("serve_browser: PASS")
